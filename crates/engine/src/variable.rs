//! `Variable`: a tensor plus its autograd state (requires_grad, grad, grad_fn, volatile),
//! and how ops record history: `record` / `record_view` create a graph node holding the
//! op's backward rule and saved tensors, `in_place` rebases history for in-place writes.
//! The ops themselves live by family in `crate::ops` (Note [Op families]).

use crate::autograd::graph::{self, Arena, Edge, InputMeta, NodeKind};
use crate::autograd::hooks::{self, HookHandle, NodeHooks, ObserveHook, TensorHook};
use crate::autograd::{engine, grad_mode, Value};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::{index, OpRule, Rule};
use crate::shape::Dims;
use crate::storage::WriteSite;
use crate::tensor::{BinaryOp, Scalar, Tensor};
use smallvec::{smallvec, SmallVec};
use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, Weak};

/// A tensor that takes part in automatic differentiation.
///
/// Cloning a `Variable` is cheap and yields another handle to the same variable (the
/// same `.grad`, the same history), like assigning a Python reference.
#[derive(Clone)]
pub struct Variable(Arc<VariableInner>);

/// A reference to a [`Variable`] that does not keep it alive (what the graph holds of a
/// leaf, Note [The graph does not own leaves]).
#[derive(Clone)]
pub struct WeakVariable(Weak<VariableInner>);

struct VariableInner {
    /// The data the variable was made with, until `set_data` replaces it.
    tensor: Tensor,
    /// The data given by `set_data` (`x.data = src`), once it has been called: rare, so
    /// reading the data costs one atomic load until then. See Note [Version counters].
    replaced: OnceLock<RwLock<Arc<Tensor>>>,
    /// Made in inference mode (PyTorch's inference tensors): never saved for backward,
    /// not written in place outside inference mode. See Note [Inference mode]. Outside
    /// the meta's lock: every recorded op reads it for each tensor it saves.
    inference: AtomicBool,
    meta: Mutex<AutogradMeta>,
}

/// A variable's data, borrowed (`Variable::tensor`): dereferences to the [`Tensor`].
///
/// It is a plain reference unless the data was replaced (`Variable::set_data`), in which
/// case it holds the replacing tensor, so a concurrent `set_data` cannot free the data
/// while it is being read.
pub enum TensorRef<'a> {
    /// The data the variable was made with.
    Original(&'a Tensor),
    /// Data given later by `set_data`.
    Replaced(Arc<Tensor>),
}

impl std::ops::Deref for TensorRef<'_> {
    type Target = Tensor;

    fn deref(&self) -> &Tensor {
        match self {
            TensorRef::Original(t) => t,
            TensorRef::Replaced(t) => t,
        }
    }
}

#[derive(Default)]
struct AutogradMeta {
    /// Set by the user on leaves; non-leaves require grad iff they have a grad_fn.
    requires_grad: bool,
    volatile: bool,
    grad_fn: Option<NodeRef>,
    output_nr: u32,
    grad: Option<Variable>,
    /// Weak: the AccumulateGrad node owns the variable, not the other way round.
    grad_accumulator: Option<NodeId>,
    /// The variable this one is a view of (always the root base, never a view).
    view_base: Option<Variable>,
    /// For views: the storage version when `grad_fn` was last derived. A different
    /// version means the base's history may have changed since (an in-place write), so
    /// the view's history is re-derived from the base's. See Note [In-place ops].
    view_version: u64,
    /// For views: whether the view was made while recording (views made under no_grad
    /// never acquire history, as in PyTorch).
    view_created_with_grad: bool,
    /// For views: an output of a function that returns several views (`split`,
    /// `unbind`), or a view of one, made while recording (PyTorch's
    /// `CreationMeta::MULTI_OUTPUT_NODE`): recorded in-place writes raise. See Note
    /// [Multi-output nodes].
    view_multi_output: bool,
    /// `retain_grad()` was called on this non-leaf: its grad_fn holds a hook that fills
    /// `.grad`, which follows the variable to a new grad_fn (Note \[Hooks\]).
    retains_grad: bool,
    /// A leaf's tensor hooks and post-accumulate-grad hooks (Note \[Hooks\]).
    hooks: Option<Box<NodeHooks<Variable>>>,
    /// For views: an input a custom Function returned as-is, or a view of one (PyTorch's
    /// `CreationMeta::IN_CUSTOM_FUNCTION`): recorded in-place writes raise, and its
    /// history stays the Function's node (Note [Custom Functions]).
    view_custom_function: bool,
}

/// A counted reference to a node of the graph of [`Variable`]s (a `grad_fn`).
pub type NodeRef = graph::NodeRef<Variable>;

/// The id of a node of the graph of [`Variable`]s.
pub type NodeId = graph::NodeId<Variable>;

/// A tensor saved for backward by a node of the Variable graph.
pub(crate) type SavedTensor = crate::autograd::saved::SavedTensor<Variable>;

/// Saved-tensor slots of a node: `None` where the rule will not need it.
pub(crate) type SavedSlots = crate::autograd::saved::SavedSlots<Variable>;

/// An input's gradient edge, owning the reference when it created the node.
pub(crate) type EdgeSource = graph::EdgeSource<Variable>;

/// PyTorch's refusal of an in-place write to an inference tensor outside inference mode.
const INFERENCE_INPLACE: &str = "Inplace update to inference tensor outside InferenceMode is not \
     allowed.You can make a clone to get a normal tensor before doing inplace update.See \
     https://github.com/pytorch/rfcs/pull/17 for more details.";

/// PyTorch's refusal of `detach_()` on a view.
const DETACH_VIEW_INPLACE: &str = "Can't detach views in-place. Use detach() instead. If you are \
     using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as \
     True, gradients are views of DDP buckets, and hence detach_() cannot be called on these \
     gradients. To fix this error, please refer to the Optimizer.zero_grad() function in \
     torch/optim/optimizer.py as the solution.";

/// PyTorch's refusal to save an inference tensor for backward.
pub const INFERENCE_SAVED: &str = "Inference tensors cannot be saved for backward. Please do \
     not use Tensors created in inference mode in computation tracked by autograd. To work \
     around this, you can make a clone to get a normal tensor and use it in autograd.";

/// Whether `saved` holds an inference tensor; if so, defers PyTorch's error for the
/// op's caller ([`take_deferred_error`]).
fn saves_inference_tensor(saved: &SavedSlots) -> bool {
    let found = saved
        .iter()
        .flatten()
        .any(|s| s.variable().is_some_and(Variable::is_inference));
    if found {
        crate::autograd::saved::defer_error(Error::InvalidArgument(INFERENCE_SAVED.into()));
    }
    found
}

/// The error met while saving tensors by the last op on this thread: an inference
/// tensor PyTorch refuses to save, or a saved-tensor pack hook's error. The op returned
/// its result without history (PyTorch raises from the op); its caller takes the error
/// here and raises it (the Python binding does it after every op). Clears it.
pub fn take_deferred_error() -> Option<Error> {
    crate::autograd::saved::take_deferred_error()
}

/// The one arena of the Variable graph.
static ARENA: Arena<Variable> = Arena::new();

/// What autograd needs from a Variable: the scheduler, the saved tensors and the
/// AccumulateGrad nodes work through this, so `autograd` never names `Variable`.
impl Value for Variable {
    type Rule = OpRule;
    type Data<'a> = TensorRef<'a>;
    type Weak = WeakVariable;

    fn arena() -> &'static Arena<Variable> {
        &ARENA
    }

    fn downgrade(&self) -> Self::Weak {
        WeakVariable(Arc::downgrade(&self.0))
    }

    fn upgrade(weak: &Self::Weak) -> Option<Variable> {
        weak.0.upgrade().map(Variable)
    }

    fn data(&self) -> TensorRef<'_> {
        self.tensor()
    }

    fn detached(&self) -> Variable {
        self.detach()
    }

    fn for_saving(&self) -> Variable {
        let m = self.meta_fresh();
        match (&m.view_base, &m.grad_fn) {
            (Some(_), Some(grad_fn)) => {
                let (grad_fn, output_nr) = (grad_fn.clone(), m.output_nr);
                drop(m);
                Variable::with_history(self.tensor().clone(), grad_fn, output_nr)
            }
            _ => {
                drop(m);
                self.clone()
            }
        }
    }

    fn from_data(tensor: Tensor) -> Variable {
        Variable::from_tensor(tensor)
    }

    fn with_history(tensor: Tensor, grad_fn: NodeRef, output_nr: u32) -> Variable {
        Variable::with_history(tensor, grad_fn, output_nr)
    }

    fn history(&self) -> Option<(NodeId, u32)> {
        self.grad_fn_id()
    }

    fn needs_grad(&self) -> bool {
        self.requires_grad()
    }

    fn gradient_edge(&self) -> Option<EdgeSource> {
        Variable::gradient_edge(self)
    }

    fn grad_add(&self, other: &Variable) -> Result<Variable> {
        self.add(other)
    }

    fn grad_cast(&self, dtype: DType) -> Result<Variable> {
        self.to_dtype(dtype)
    }

    fn accumulate(&self, grad: Variable) -> Result<()> {
        self.accumulate_grad(grad)
    }

    fn leaf_hooks(&self) -> Option<NodeHooks<Variable>> {
        self.meta().hooks.as_deref().cloned()
    }

    fn retain_grad(&self) -> Result<()> {
        Variable::retain_grad(self)
    }

    fn grad_region(&self, layout: &Layout) -> Result<Variable> {
        self.as_strided(layout)
    }

    fn grad_replace_region(&self, layout: &Layout, value: Option<&Variable>) -> Result<Variable> {
        self.replace_region(layout, value)
    }
}

/// One output's gradient metadata: `(dtype, shape)` of `t`.
fn output_meta(t: &Tensor) -> InputMeta {
    let mut meta = InputMeta::new();
    meta.push((t.dtype(), t.shape().into()));
    meta
}

impl std::fmt::Debug for Variable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.repr())
    }
}

impl std::fmt::Display for Variable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.repr())
    }
}

impl Variable {
    // ----- construction and state ---------------------------------------------------

    /// A leaf with no autograd history that does not require grad.
    pub fn from_tensor(tensor: Tensor) -> Variable {
        Variable(Arc::new(VariableInner {
            tensor,
            replaced: OnceLock::new(),
            inference: AtomicBool::new(grad_mode::is_inference_mode_enabled()),
            meta: Mutex::new(AutogradMeta::default()),
        }))
    }

    /// A non-leaf with the given history (re-attaching a saved output to its node).
    pub(crate) fn with_history(tensor: Tensor, grad_fn: NodeRef, output_nr: u32) -> Variable {
        let v = Variable::from_tensor(tensor);
        {
            let mut m = v.meta();
            m.grad_fn = Some(grad_fn);
            m.output_nr = output_nr;
        }
        v
    }

    /// A leaf; `requires_grad` needs a floating-point dtype.
    pub fn new(tensor: Tensor, requires_grad: bool) -> Result<Variable> {
        if requires_grad && !tensor.dtype().is_floating_point() {
            return Err(Error::NewLeafRequiresGradNonFloat);
        }
        let v = Variable::from_tensor(tensor);
        v.set_requires_grad(requires_grad)?;
        Ok(v)
    }

    /// A volatile leaf (the legacy inference flag): every op with a volatile input
    /// gives a volatile output that records nothing.
    pub fn new_volatile(tensor: Tensor) -> Variable {
        let v = Variable::from_tensor(tensor);
        v.meta().volatile = true;
        v
    }

    /// A leaf from a slice of values and a shape.
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<Variable> {
        Ok(Variable::from_tensor(Tensor::from_vec(
            data.to_vec(),
            shape,
        )?))
    }

    fn meta(&self) -> MutexGuard<'_, AutogradMeta> {
        // Meta updates are single assignments; a poisoned lock still holds valid state.
        self.0.meta.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The meta, after re-deriving a stale view's history from its base.
    fn meta_fresh(&self) -> MutexGuard<'_, AutogradMeta> {
        let m = self.meta();
        let stale = match &m.view_base {
            Some(base) if m.view_version != self.tensor().version() => Some((
                base.clone(),
                m.view_created_with_grad && !m.view_custom_function,
            )),
            _ => None,
        };
        let Some((base, created_with_grad)) = stale else {
            return m;
        };
        drop(m);
        let version = self.tensor().version();
        if created_with_grad && base.requires_grad() {
            self.derive_view_history(&base, version);
        } else {
            self.meta().view_version = version;
        }
        self.meta()
    }

    /// Sets this view's grad_fn to "the elements of `base`'s current history at this
    /// view's place" (AsStridedBackward0).
    fn derive_view_history(&self, base: &Variable, version: u64) {
        let Some(layout) = self.tensor().layout_within(&base.tensor()) else {
            self.meta().view_version = version;
            return;
        };
        let edge = base.gradient_edge();
        let node = graph::create_node_with_sources(
            NodeKind::Op(OpRule(Rule::Index(index::Rule::AsStrided(Box::new((
                base.shape(),
                layout,
            )))))),
            smallvec![edge],
            SmallVec::new(),
            output_meta(&self.tensor()),
        );
        let (old, old_nr, retains) = {
            let mut m = self.meta();
            m.view_version = version;
            let old_nr = std::mem::replace(&mut m.output_nr, 0);
            (m.grad_fn.replace(node), old_nr, m.retains_grad)
        };
        if retains {
            self.move_retained_grad(old.as_ref(), old_nr);
        }
        drop(old);
    }

    /// The data.
    pub fn tensor(&self) -> TensorRef<'_> {
        match self.0.replaced.get() {
            None => TensorRef::Original(&self.0.tensor),
            Some(lock) => {
                TensorRef::Replaced(lock.read().unwrap_or_else(|e| e.into_inner()).clone())
            }
        }
    }

    /// A number identifying this variable among the live ones (the address of its shared
    /// state): equal for two handles iff `same`, reusable once the variable is dropped.
    pub fn identity(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// Whether two handles name the same variable.
    pub fn same(&self, other: &Variable) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Sizes of each dimension.
    pub fn shape(&self) -> Dims {
        self.tensor().shape().into()
    }

    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.tensor().dim()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.tensor().numel()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.tensor().dtype()
    }

    /// The single value of a one-element variable.
    pub fn item(&self) -> Result<Scalar> {
        self.tensor().item()
    }

    /// The values in row-major order, converted to `T`.
    pub fn to_vec<T: Element>(&self) -> Vec<T> {
        self.tensor().to_vec()
    }

    /// Whether gradients flow to (leaf) or through (non-leaf) this variable.
    pub fn requires_grad(&self) -> bool {
        let m = self.meta_fresh();
        if m.requires_grad || m.grad_fn.is_some() {
            return true;
        }
        // PyTorch's DifferentiableViewMeta: a view without history (made under no_grad,
        // or before its base required grad) requires grad when its base does. Its
        // gradient edge stays empty (Note [Views and in-place checks]).
        let base = m.view_base.clone();
        drop(m);
        base.is_some_and(|b| b.requires_grad())
    }

    /// Sets requires_grad on a leaf (PyTorch's `requires_grad_`).
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<()> {
        let mut m = self.meta();
        if requires_grad && self.is_inference() && !grad_mode::is_inference_mode_enabled() {
            return Err(Error::InvalidArgument(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not \
                 allowed."
                    .into(),
            ));
        }
        if m.grad_fn.is_some() {
            if requires_grad {
                return Ok(());
            }
            return Err(Error::NonLeafRequiresGrad);
        }
        if requires_grad && !self.dtype().is_floating_point() {
            return Err(Error::RequiresGradNonFloat);
        }
        m.requires_grad = requires_grad;
        Ok(())
    }

    /// Whether this is an inference tensor (made in inference mode, or a view of one).
    /// See Note [Inference mode].
    pub fn is_inference(&self) -> bool {
        self.0.inference.load(Ordering::Relaxed)
    }

    /// The storage version (PyTorch's `t._version`); inference tensors have none.
    pub fn version(&self) -> Result<u64> {
        if self.is_inference() {
            return Err(Error::InvalidArgument(
                "Inference tensors do not track version counter.".into(),
            ));
        }
        Ok(self.tensor().version())
    }

    /// Refuses an in-place write to an inference tensor outside inference mode.
    fn check_inference_write(&self) -> Result<()> {
        if self.is_inference() && !grad_mode::is_inference_mode_enabled() {
            return Err(Error::InvalidArgument(INFERENCE_INPLACE.into()));
        }
        Ok(())
    }

    /// The legacy volatile flag.
    pub fn is_volatile(&self) -> bool {
        self.meta().volatile
    }

    /// Whether this variable was created by the user rather than by a recorded op.
    pub fn is_leaf(&self) -> bool {
        self.meta_fresh().grad_fn.is_none()
    }

    /// The node that created this variable, if recorded.
    pub fn grad_fn(&self) -> Option<NodeRef> {
        self.meta_fresh().grad_fn.clone()
    }

    /// Which output of its grad_fn this variable is.
    pub fn output_nr(&self) -> u32 {
        self.meta().output_nr
    }

    /// `(grad_fn id, output_nr)`, for error messages about saved tensors.
    pub(crate) fn grad_fn_id(&self) -> Option<(NodeId, u32)> {
        let m = self.meta();
        Some((m.grad_fn.as_ref()?.id(), m.output_nr))
    }

    /// The accumulated gradient (leaves that require grad, after backward).
    pub fn grad(&self) -> Option<Variable> {
        let grad = self.meta().grad.clone();
        if let Some(g) = &grad {
            crate::jit::record_now(|| crate::jit::Op::Grad, &[self], std::slice::from_ref(g));
        }
        grad
    }

    /// Replaces the accumulated gradient (`x.grad = g` / `x.grad = None`). The gradient
    /// must have this variable's shape and dtype and must not be the variable itself.
    pub fn set_grad(&self, grad: Option<Variable>) -> Result<()> {
        let value = grad.clone();
        let op = || crate::jit::Op::SetGrad {
            has_value: value.is_some(),
        };
        crate::jit::op_opt(op, &[self], &[value.as_ref()], || self.set_grad_impl(grad))
    }

    fn set_grad_impl(&self, grad: Option<Variable>) -> Result<()> {
        if let Some(g) = &grad {
            if g.same(self) {
                return Err(Error::InvalidArgument(
                    "can't assign Variable as its own grad".into(),
                ));
            }
            // Both PyTorch phrasings: the 2.0-era key phrase, then today's sentence.
            if g.dtype() != self.dtype() {
                return Err(Error::dtype(
                    "grad",
                    format!(
                        "assigned grad has data of a different type: attempting to assign a gradient with dtype '{}' to a tensor with grad_dtype '{}'. The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype).",
                        g.dtype().cpp_type_name(),
                        self.dtype().scalar_type_name()
                    ),
                ));
            }
            if g.shape() != self.shape() {
                return Err(Error::ShapeMismatch {
                    op: "grad",
                    message: format!(
                        "assigned grad has data of a different size: attempting to assign a gradient of size '{:?}' to a tensor of size '{:?}'. Please ensure that the gradient and the tensor are the same size",
                        g.shape(),
                        self.shape()
                    ),
                });
            }
        }
        let old = std::mem::replace(&mut self.meta().grad, grad);
        drop(old);
        Ok(())
    }

    /// The variable this one views, if it is a view.
    pub fn view_base(&self) -> Option<Variable> {
        self.meta().view_base.clone()
    }

    /// Whether this variable is a view (has a base); a view stays one.
    pub fn is_view(&self) -> bool {
        self.meta().view_base.is_some()
    }

    /// A new leaf sharing this variable's data (and version counter), with no history.
    pub fn detach(&self) -> Variable {
        let out = Variable::from_tensor(self.tensor().clone());
        out.0
            .inference
            .store(self.is_inference(), Ordering::Relaxed);
        out
    }

    /// PyTorch's `x.data`: a leaf sharing this variable's elements, with no history and
    /// its own version counter, so writes through it (the legacy `p.data -= lr * g`)
    /// do not invalidate tensors saved from `x`, as in PyTorch.
    pub fn data(&self) -> Variable {
        Variable::from_tensor(self.tensor().with_own_version_counter())
    }

    /// PyTorch's `x.data = src`: from now on `x`'s data is `src`'s (the same elements,
    /// any shape and dtype), while `x` keeps its autograd identity (requires_grad, grad,
    /// grad_fn) and its version counter, still shared with the views of `x` made before
    /// (as PyTorch's `set_data`; `src` keeps its own). Every handle of `x` sees the new
    /// data, including graph nodes that saved `x`; views of `x` made before keep the old
    /// elements. See Note [Version counters].
    pub fn set_data(&self, src: &Variable) -> Result<()> {
        if self.same(src) {
            return Ok(());
        }
        let new = src.tensor();
        if self.requires_grad() && !new.dtype().is_floating_point() {
            return Err(Error::DataRequiresGradNonFloat);
        }
        let old = self.tensor();
        let new = Arc::new(new.with_version_counter_of(&old));
        if old.dtype() != new.dtype() || old.shape() != new.shape() {
            // The accumulator's input metadata describes the old data.
            self.meta().grad_accumulator = None;
        }
        drop(old);
        self.replace_tensor(new);
        Ok(())
    }

    /// Makes `new` this variable's data (`set_data`, in-place view ops).
    fn replace_tensor(&self, new: Arc<Tensor>) {
        let lock = self.0.replaced.get_or_init(|| RwLock::new(new.clone()));
        *lock.write().unwrap_or_else(|e| e.into_inner()) = new;
    }

    /// Turns this variable into a leaf that does not require grad. A view refuses, as in
    /// PyTorch: its history is its base's (Note [Views and in-place checks]).
    pub fn detach_(&self) -> Result<()> {
        let old = {
            let mut m = self.meta();
            if m.view_base.is_some() {
                return Err(Error::InvalidArgument(DETACH_VIEW_INPLACE.into()));
            }
            m.requires_grad = false;
            m.output_nr = 0;
            m.grad_fn.take()
        };
        drop(old);
        Ok(())
    }

    /// The edge gradients of this variable flow along: its grad_fn, or for a leaf that
    /// requires grad its AccumulateGrad node (created on first use, then reused while
    /// alive).
    pub(crate) fn gradient_edge(&self) -> Option<EdgeSource> {
        let mut m = self.meta_fresh();
        if let Some(f) = &m.grad_fn {
            return Some(EdgeSource::Borrowed(Edge {
                node: f.id(),
                input_nr: m.output_nr,
            }));
        }
        if !m.requires_grad {
            return None;
        }
        if let Some(node) = m.grad_accumulator.and_then(NodeRef::upgrade) {
            return Some(EdgeSource::Owned(node));
        }
        let node = graph::create_node(
            NodeKind::AccumulateGrad(self.downgrade()),
            SmallVec::new(),
            SmallVec::new(),
            output_meta(&self.tensor()),
        );
        m.grad_accumulator = Some(node.id());
        Some(EdgeSource::Owned(node))
    }

    // ----- recording ----------------------------------------------------------------

    /// Wraps an op's result: volatile if any input is, recorded (with the node that
    /// `build` describes) if grad mode is on and any input requires grad, plain otherwise.
    pub(crate) fn record<R: Into<Rule>>(
        result: Tensor,
        inputs: &[&Variable],
        build: impl FnOnce(&[bool], &Variable) -> (R, SavedSlots),
    ) -> Variable {
        let site = std::any::type_name_of_val(&build);
        Variable::noted(Variable::record_unnoted(result, inputs, build), site)
    }

    fn record_unnoted<R: Into<Rule>>(
        result: Tensor,
        inputs: &[&Variable],
        build: impl FnOnce(&[bool], &Variable) -> (R, SavedSlots),
    ) -> Variable {
        let mut needs: SmallVec<[bool; 3]> = SmallVec::new();
        let mut volatile = false;
        let grad_enabled = grad_mode::is_grad_enabled() && !grad_mode::is_inference_mode_enabled();
        for v in inputs {
            let m = v.meta_fresh();
            volatile |= m.volatile;
            let direct = m.requires_grad || m.grad_fn.is_some();
            // A view without history whose base requires grad (see `requires_grad`).
            let base = (grad_enabled && !direct)
                .then(|| m.view_base.clone())
                .flatten();
            drop(m);
            needs.push(direct || base.is_some_and(|b| b.requires_grad()));
        }
        if volatile {
            return Variable::new_volatile(result);
        }
        // Integer and bool results never carry history (Note [Differentiable dtypes]).
        if !needs.iter().any(|&n| n) || !grad_enabled || !result.dtype().is_floating_point() {
            return Variable::from_tensor(result);
        }
        let meta = output_meta(&result);
        let out = Variable::from_tensor(result);
        let (op, saved) = build(&needs, &out);
        if saves_inference_tensor(&saved) {
            return out;
        }
        let edges: SmallVec<[Option<EdgeSource>; 2]> = inputs
            .iter()
            .zip(&needs)
            .map(|(v, &n)| if n { v.gradient_edge() } else { None })
            .collect();
        let node =
            graph::create_node_with_sources(NodeKind::Op(OpRule(op.into())), edges, saved, meta);
        out.meta().grad_fn = Some(node);
        out
    }

    /// [`Variable::record`], telling a capture in progress which op made the result
    /// (Note [Capture and replay]).
    fn noted(out: Variable, site: &str) -> Variable {
        crate::jit::note_result(&out, site);
        out
    }

    /// Like `record` for a view: the output also remembers its base.
    pub(crate) fn record_view<R: Into<Rule>>(
        &self,
        result: Tensor,
        op: impl FnOnce() -> R,
    ) -> Variable {
        let version = result.version();
        let site = std::any::type_name_of_val(&op);
        let out = Variable::record_unnoted(result, &[self], |_, _| (op(), SmallVec::new()));
        let out = Variable::noted(out, site);
        let (base, multi_output, custom) = {
            let m = self.meta();
            (
                m.view_base.clone(),
                m.view_multi_output,
                m.view_custom_function,
            )
        };
        out.set_view_of(base.unwrap_or_else(|| self.clone()), version, multi_output);
        if custom {
            let mut m = out.meta();
            m.view_custom_function = m.view_created_with_grad;
        }
        out
    }

    /// Marks this fresh output as a view of `base` (the root base) made at storage
    /// version `version`; `multi_output` for an output of a multi-output view function
    /// or a view of one (kept only when made while recording, as PyTorch's creation
    /// meta, which no_grad overrides).
    fn set_view_of(&self, base: Variable, version: u64, multi_output: bool) {
        self.0
            .inference
            .store(base.is_inference(), Ordering::Relaxed);
        let mut m = self.meta();
        m.view_created_with_grad = grad_mode::is_grad_enabled() && !m.volatile;
        m.view_multi_output = multi_output && m.view_created_with_grad;
        m.view_base = Some(base);
        m.view_version = version;
    }

    /// Wraps the results of an op with several differentiable outputs: recorded as ONE
    /// node with one output slot per result (output `i` is `(node, i)`), as PyTorch's
    /// `SplitBackward0` or `VarMeanBackward0`. Volatile, integer or unrecorded results
    /// are plain, as in `record`. `build` sees which inputs need grad and the outputs.
    /// See Note [Multi-output nodes].
    pub(crate) fn record_multi<R: Into<Rule>>(
        results: Vec<Tensor>,
        inputs: &[&Variable],
        build: impl FnOnce(&[bool], &[Variable]) -> (R, SavedSlots),
    ) -> Vec<Variable> {
        let site = std::any::type_name_of_val(&build);
        let outs = Variable::record_multi_unnoted(results, inputs, build);
        for out in &outs {
            crate::jit::note_result(out, site);
        }
        outs
    }

    fn record_multi_unnoted<R: Into<Rule>>(
        results: Vec<Tensor>,
        inputs: &[&Variable],
        build: impl FnOnce(&[bool], &[Variable]) -> (R, SavedSlots),
    ) -> Vec<Variable> {
        let mut needs: SmallVec<[bool; 3]> = SmallVec::new();
        let mut volatile = false;
        for v in inputs {
            let m = v.meta_fresh();
            volatile |= m.volatile;
            needs.push(m.requires_grad || m.grad_fn.is_some());
        }
        if volatile {
            return results.into_iter().map(Variable::new_volatile).collect();
        }
        if !needs.iter().any(|&n| n)
            || !grad_mode::is_grad_enabled()
            || grad_mode::is_inference_mode_enabled()
            || !results.iter().all(|r| r.dtype().is_floating_point())
        {
            return results.into_iter().map(Variable::from_tensor).collect();
        }
        let meta: InputMeta = results
            .iter()
            .map(|r| (r.dtype(), r.shape().into()))
            .collect();
        let outs: Vec<Variable> = results.into_iter().map(Variable::from_tensor).collect();
        let (op, saved) = build(&needs, &outs);
        if saves_inference_tensor(&saved) {
            return outs;
        }
        let edges: SmallVec<[Option<EdgeSource>; 2]> = inputs
            .iter()
            .zip(&needs)
            .map(|(v, &n)| if n { v.gradient_edge() } else { None })
            .collect();
        let node =
            graph::create_node_with_sources(NodeKind::Op(OpRule(op.into())), edges, saved, meta);
        for (nr, out) in outs.iter().enumerate() {
            let mut m = out.meta();
            m.grad_fn = Some(node.clone());
            m.output_nr = nr as u32;
        }
        outs
    }

    /// Like `record_multi` for a function that returns several views of `self`
    /// (`split`, `unbind`): the outputs are views, and writing one in place while
    /// recording raises PyTorch's "... This view is the output of a function that
    /// returns multiple views ..." (Note [Multi-output nodes]).
    pub(crate) fn record_multi_view<R: Into<Rule>>(
        &self,
        results: Vec<Tensor>,
        op: impl FnOnce() -> R,
    ) -> Vec<Variable> {
        let versions: Vec<u64> = results.iter().map(Tensor::version).collect();
        let outs = Variable::record_multi(results, &[self], |_, _| (op(), SmallVec::new()));
        let base = self.view_base().unwrap_or_else(|| self.clone());
        for (out, version) in outs.iter().zip(versions) {
            out.set_view_of(base.clone(), version, true);
        }
        outs
    }

    // ----- backward -----------------------------------------------------------------

    /// Backpropagates from this scalar (gradient 1), accumulating into the leaves' `.grad`.
    pub fn backward(&self) -> Result<()> {
        self.backward_with(None, false, false)
    }

    /// Backpropagates with an explicit `gradient` (needed for non-scalars).
    pub fn backward_with(
        &self,
        gradient: Option<&Variable>,
        retain_graph: bool,
        create_graph: bool,
    ) -> Result<()> {
        let op = || crate::jit::Op::Backward {
            has_gradient: gradient.is_some(),
            retain_graph,
            create_graph,
        };
        crate::jit::op_opt(op, &[self], &[gradient], || {
            engine::backward(
                std::slice::from_ref(self),
                &[gradient.cloned()],
                retain_graph,
                create_graph,
            )
        })
    }

    /// PyTorch's `torch.autograd.grad`: the gradients of `outputs` (weighted by
    /// `grad_outputs`, `None` = ones for a scalar output) with respect to `inputs`,
    /// which may be leaves or intermediate results. Nothing is accumulated into any
    /// `.grad`, and nodes that cannot reach an input never run. With `create_graph`
    /// the results have history (higher derivatives); `retain_graph` keeps the saved
    /// tensors (implied by `create_graph`). An input no gradient reached is `None`
    /// when `allow_unused`, otherwise an error naming its index. See Note [grad and
    /// input capture].
    ///
    /// (Named `autograd_grad` because [`Variable::grad`] reads `.grad`.)
    ///
    /// ```
    /// use rustgrad::{Tensor, Variable};
    /// let x = Variable::new(Tensor::from_vec(vec![3.0f64], &[1]).unwrap(), true).unwrap();
    /// let y = x.mul(&x).unwrap().mul(&x).unwrap().sum().unwrap(); // x³
    /// let g = Variable::autograd_grad(&[y], &[x.clone()], &[None], false, true, false).unwrap();
    /// let g = g[0].clone().unwrap(); // 3x² = 27, with history
    /// let gg = Variable::autograd_grad(&[g.sum().unwrap()], &[x.clone()], &[None], false, false, false)
    ///     .unwrap();
    /// assert_eq!(gg[0].as_ref().unwrap().to_vec::<f64>(), vec![18.0]); // 6x
    /// assert!(x.grad().is_none()); // nothing accumulated
    /// ```
    pub fn autograd_grad(
        outputs: &[Variable],
        inputs: &[Variable],
        grad_outputs: &[Option<Variable>],
        retain_graph: bool,
        create_graph: bool,
        allow_unused: bool,
    ) -> Result<Vec<Option<Variable>>> {
        crate::jit::unsupported("autograd.grad");
        let _inside = crate::jit::Scope::enter();
        if outputs.len() != grad_outputs.len() && !grad_outputs.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "grad requires one grad_output per output: got {} tensors and {} gradients",
                outputs.len(),
                grad_outputs.len()
            )));
        }
        let grads = engine::grad(outputs, grad_outputs, inputs, retain_graph, create_graph)?;
        if !allow_unused {
            if let Some(i) = grads.iter().position(Option::is_none) {
                return Err(Error::InvalidArgument(format!(
                    "The differentiated Tensor at index {i} appears to not have been used in \
                     the graph. Set allow_unused=True if this is the desired behavior."
                )));
            }
        }
        Ok(grads)
    }

    /// `backward(inputs=...)`: backpropagates from `outputs` and accumulates only into
    /// the `.grad` of `inputs` (leaves or not; other leaves are untouched).
    pub fn backward_inputs(
        outputs: &[Variable],
        grad_outputs: &[Option<Variable>],
        inputs: &[Variable],
        retain_graph: bool,
        create_graph: bool,
    ) -> Result<()> {
        crate::jit::unsupported("backward(inputs=...)");
        // Its rules' ops are not nodes of a capture (Note [Capture and replay]).
        let _inside = crate::jit::Scope::enter();
        engine::backward_inputs(outputs, grad_outputs, inputs, retain_graph, create_graph)
    }

    /// Adds `grad` into `.grad` (the AccumulateGrad rule). See Note [Gradient
    /// ownership]: the stored gradient is owned by this leaf (never an expanded or
    /// overlapping view, never a buffer shared with another leaf or the graph), and an
    /// existing gradient is updated in place only when grad mode is off (no
    /// `create_graph`) and it has no overlapping elements; otherwise out of place.
    pub(crate) fn accumulate_grad(&self, grad: Variable) -> Result<()> {
        // The meta lock is not held while computing: `grad` may be (a view of) this
        // very variable when a user passes it as the root gradient.
        let old = self.meta().grad.take();
        let new = match old {
            None => Variable::owned_grad(grad)?,
            Some(old) => Variable::add_grad(old, &grad)?,
        };
        let mut m = self.meta();
        // Another thread's backward may have stored a gradient meanwhile: keep both.
        let new = match m.grad.take() {
            Some(other) => {
                drop(m);
                let sum = Variable::add_grad(other, &new)?;
                m = self.meta();
                sum
            }
            None => new,
        };
        m.grad = Some(new);
        Ok(())
    }

    /// A first gradient made into one its leaf owns: the incoming buffer itself when
    /// nothing else refers to it and it is dense (taken over without a copy), else a
    /// copy. With grad mode on (`create_graph`) the copy is recorded (CloneBackward0)
    /// so the gradient keeps its history.
    fn owned_grad(grad: Variable) -> Result<Variable> {
        if grad_mode::is_grad_enabled() {
            return grad.clone_data();
        }
        let t = grad.tensor();
        let sole_owner = Arc::strong_count(&grad.0) == 1
            && Arc::strong_count(t.storage()) == 1
            && t.is_contiguous()
            && t.layout().offset() == 0
            && t.storage().read().len() == grad.numel();
        Ok(if sole_owner {
            grad.detach()
        } else {
            crate::tensor::check_allocation(grad.numel(), grad.dtype())?;
            Variable::from_tensor(t.deep_clone()?)
        })
    }

    /// `old + grad` for an existing `.grad`: in place when that is safe, else a new
    /// owned gradient (recorded when grad mode is on).
    fn add_grad(old: Variable, grad: &Variable) -> Result<Variable> {
        if grad_mode::is_grad_enabled() {
            return old.add(grad);
        }
        let site = WriteSite::Rust(Location::caller());
        if old
            .tensor()
            .binary_in_place(&grad.tensor(), BinaryOp::Add, &site)?
        {
            return Ok(old);
        }
        let sum = old.tensor().binary(&grad.tensor(), BinaryOp::Add)?;
        if old.tensor().layout().is_non_overlapping() {
            old.tensor().copy_from(&sum, site)?;
            Ok(old)
        } else {
            // An expanded (overlapping) user-assigned gradient cannot hold the sum;
            // PyTorch raises here, we store a fresh owned gradient instead.
            Ok(Variable::from_tensor(sum))
        }
    }

    /// PyTorch's repr: `tensor(..., grad_fn=<...>)` / `requires_grad=True`.
    pub fn repr(&self) -> String {
        let suffix = match self.grad_fn() {
            Some(f) => graph::node_name(f.id())
                .ok()
                .map(|n| format!("grad_fn=<{n}>")),
            None if self.requires_grad() => Some("requires_grad=True".to_string()),
            None => None,
        };
        crate::format::repr_tensor(&self.tensor(), suffix.as_deref())
    }

    // ----- hooks (Note [Hooks]) -----------------------------------------------------

    /// PyTorch's `Tensor.register_hook`: `hook` sees the gradient w.r.t. this variable
    /// during backward (and `autograd_grad`) and may replace it. On a non-leaf it runs
    /// before the grad_fn uses the gradient (a tensor pre-hook of its output slot); on a
    /// leaf, before the gradient is accumulated into `.grad` or captured. Several hooks
    /// run in registration order.
    ///
    /// ```
    /// use rustgrad::{Tensor, Variable};
    /// use std::sync::Arc;
    /// let x = Variable::new(Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap(), true).unwrap();
    /// let y = x.mul(&x).unwrap();
    /// y.register_hook(Arc::new(|g: Option<&Variable>| Ok(g.map(|g| g.mul(g).unwrap()))))
    ///     .unwrap();
    /// let gy = Variable::from_slice(&[3.0f32, 3.0], &[2]).unwrap();
    /// y.backward_with(Some(&gy), false, false).unwrap();
    /// assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![18.0, 36.0]); // 2x · 9
    /// ```
    pub fn register_hook(&self, hook: TensorHook<Variable>) -> Result<HookHandle> {
        if !self.requires_grad() {
            return Err(Error::InvalidArgument(
                "cannot register a hook on a tensor that doesn't require gradient".into(),
            ));
        }
        let edge = {
            let m = self.meta_fresh();
            m.grad_fn.as_ref().map(|f| (f.id(), m.output_nr))
        };
        if let Some((node, output_nr)) = edge {
            return hooks::register_output_hook(node, output_nr, hook);
        }
        let id = hooks::next_hook_id();
        self.meta()
            .hooks
            .get_or_insert_with(Default::default)
            .tensor_pre_hooks
            .push((id, 0, hook));
        Ok(self.leaf_hook_handle(id))
    }

    /// PyTorch's `Tensor.register_post_accumulate_grad_hook`: `hook` runs with this leaf
    /// after its `.grad` was updated in backward. Leaves only.
    pub fn register_post_accumulate_grad_hook(
        &self,
        hook: ObserveHook<Variable>,
    ) -> Result<HookHandle> {
        if !self.requires_grad() {
            return Err(Error::InvalidArgument(
                "cannot register a hook on a tensor that doesn't require gradient".into(),
            ));
        }
        if !self.is_leaf() {
            return Err(Error::InvalidArgument(
                "post accumulate grad hooks cannot be registered on non-leaf tensors".into(),
            ));
        }
        let id = hooks::next_hook_id();
        self.meta()
            .hooks
            .get_or_insert_with(Default::default)
            .post_accumulate
            .push((id, hook));
        Ok(self.leaf_hook_handle(id))
    }

    /// A handle removing hook `id` from this leaf's hooks (held weakly: the handle does
    /// not keep the variable alive).
    fn leaf_hook_handle(&self, id: hooks::HookId) -> HookHandle {
        let weak: Weak<VariableInner> = Arc::downgrade(&self.0);
        HookHandle::new(id, move |id| {
            let Some(inner) = weak.upgrade() else {
                return;
            };
            let var = Variable(inner);
            // The removed hook is dropped after the meta lock is released: it may hold
            // a Python object whose destructor runs arbitrary code.
            let old = {
                let mut m = var.meta();
                let old = m.hooks.clone();
                if let Some(h) = m.hooks.as_mut() {
                    h.remove(id);
                }
                old
            };
            drop(old);
        })
    }

    /// PyTorch's `retain_grad()`: a non-leaf's `.grad` is filled in backward (summed over
    /// backward calls, like a leaf's). A no-op on a leaf. The retained gradient is the
    /// one after this variable's tensor hooks, and follows the variable when an
    /// in-place op gives it a new grad_fn.
    pub fn retain_grad(&self) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::InvalidArgument(
                "can't retain_grad on Tensor that has requires_grad=False".into(),
            ));
        }
        let (node, output_nr) = {
            let mut m = self.meta_fresh();
            let Some(f) = &m.grad_fn else {
                return Ok(());
            };
            if m.retains_grad {
                return Ok(());
            }
            let node = f.id();
            m.retains_grad = true;
            (node, m.output_nr)
        };
        graph::set_retains_grad(node, output_nr, Some(self.retain_hook()));
        Ok(())
    }

    /// Whether `retain_grad()` was called on this non-leaf (False for leaves).
    pub fn retains_grad(&self) -> bool {
        self.meta().retains_grad
    }

    /// The hook `retain_grad` installs: accumulates into `.grad` (holding the variable
    /// weakly, so the graph does not keep its output alive).
    fn retain_hook(&self) -> ObserveHook<Variable> {
        let weak: Weak<VariableInner> = Arc::downgrade(&self.0);
        Arc::new(move |grad: &Variable| match weak.upgrade() {
            Some(inner) => Variable(inner).accumulate_grad(grad.clone()),
            None => Ok(()),
        })
    }

    /// Moves the `retain_grad` hook from the old grad_fn (output `old_nr`) to the
    /// current one, after an in-place op or a view's re-derived history changed it.
    fn move_retained_grad(&self, old: Option<&NodeRef>, old_nr: u32) {
        if let Some(old) = old {
            graph::set_retains_grad(old.id(), old_nr, None);
        }
        if let Some((node, output_nr)) = self.grad_fn_id() {
            graph::set_retains_grad(node, output_nr, Some(self.retain_hook()));
        }
    }

    // ----- in-place writes (Note [In-place ops]) ----------------------------------

    /// Runs an in-place op: `compute(self_like)` gives the new value, which is written
    /// into this variable's storage (one version bump); when recording, this variable's
    /// history is rebased onto the op's node. See Note [In-place ops].
    pub(crate) fn in_place(
        &self,
        other: Option<&Variable>,
        site: WriteSite,
        compute: impl FnOnce(&Variable) -> Result<Variable>,
    ) -> Result<()> {
        let operands: SmallVec<[&Variable; 1]> = other.into_iter().collect();
        self.in_place_impl(&operands, Overlap::Forbidden, site, None, compute)
    }

    /// `in_place` for `self op= other` (`add_`, `sub_`, `mul_`, `div_`): when nothing is
    /// recorded, the result is computed straight into this variable's storage where
    /// `Tensor::binary_in_place` applies (Note [In-place kernels]); otherwise as
    /// `in_place`, with `compute`.
    pub(crate) fn in_place_binary(
        &self,
        other: &Variable,
        op: BinaryOp,
        site: WriteSite,
        compute: impl FnOnce(&Variable) -> Result<Variable>,
    ) -> Result<()> {
        self.in_place_impl(&[other], Overlap::Forbidden, site, Some(op), compute)
    }

    /// `in_place` for an op with several tensor operands (`addcmul_`, `lerp_`, ...):
    /// every operand takes part in recording, volatility and the overlap check.
    pub(crate) fn in_place_operands(
        &self,
        operands: &[&Variable],
        site: WriteSite,
        compute: impl FnOnce(&Variable) -> Result<Variable>,
    ) -> Result<()> {
        self.in_place_impl(operands, Overlap::Forbidden, site, None, compute)
    }

    /// `in_place`, where `overlap` says whether the destination may have elements that
    /// share memory (only `fill_`/`zero_`, which are idempotent, allow it), and `direct`
    /// names the binary op `compute` performs with `operands[0]` when it may be computed
    /// in place (`in_place_binary`).
    pub(crate) fn in_place_impl(
        &self,
        operands: &[&Variable],
        overlap: Overlap,
        site: WriteSite,
        direct: Option<BinaryOp>,
        compute: impl FnOnce(&Variable) -> Result<Variable>,
    ) -> Result<()> {
        if crate::jit::is_capturing() {
            let name = crate::jit::op_name_from_site(std::any::type_name_of_val(&compute));
            crate::jit::unsupported(&format!("the in-place op `{name}`"));
        }
        self.check_inference_write()?;
        let volatile = self.is_volatile() || operands.iter().any(|o| o.is_volatile());
        let inference = grad_mode::is_inference_mode_enabled();
        // An integer or bool tensor written in place stays without history whatever
        // the operand (Note [Differentiable dtypes]).
        let recording = grad_mode::is_grad_enabled()
            && !inference
            && !volatile
            && self.dtype().is_floating_point()
            && (self.requires_grad() || operands.iter().any(|o| o.requires_grad()));
        let view = self.view_base();
        let recording = recording
            || (grad_mode::is_grad_enabled()
                && !inference
                && !volatile
                && self.dtype().is_floating_point()
                && view.as_ref().is_some_and(Variable::requires_grad));
        if recording {
            if let Some(base) = view {
                self.check_view_write(&base)?;
                self.check_write_overlap(operands, overlap)?;
                return self.in_place_on_view(&base, site, compute);
            }
            if self.is_leaf() && self.requires_grad() {
                return Err(Error::LeafInplace);
            }
        }
        self.check_write_overlap(operands, overlap)?;
        if let (false, Some(op), [other]) = (recording, direct, operands) {
            if self.tensor().binary_in_place(&other.tensor(), op, &site)? {
                return Ok(());
            }
        }
        // The op reads a private copy of the old value that carries this variable's
        // history, so saved tensors never alias the storage about to be written.
        let source = if recording {
            self.twin()?
        } else {
            self.clone()
        };
        let out = compute(&source)?;
        self.write_result(&out, site)?;
        if recording {
            let node = out.meta().grad_fn.take();
            if let Some(node) = &node {
                // The op's output is this variable: a later write to it must invalidate
                // what the node saved of its result (`y.relu_(); y.add_(1)` raises).
                graph::rebind_saved_outputs(node.id(), self)?;
            }
            let (old, old_nr, retains) = {
                let mut m = self.meta();
                let old_nr = std::mem::replace(&mut m.output_nr, 0);
                (
                    std::mem::replace(&mut m.grad_fn, node),
                    old_nr,
                    m.retains_grad,
                )
            };
            if retains {
                self.move_retained_grad(old.as_ref(), old_nr);
            }
            drop(old);
        }
        Ok(())
    }

    /// An in-place view op (`squeeze_`, `t_`, `as_strided_`, ...): this variable's data
    /// becomes `result`, a view of the same storage with another layout, and the
    /// version counter is bumped once. When recording, the history becomes a node of
    /// `rule` whose input is the old history. A leaf (or a view of a leaf) that requires
    /// grad raises PyTorch's leaf error; under no_grad the history is kept as PyTorch
    /// keeps it. See Note [In-place view ops].
    pub(crate) fn in_place_view<R: Into<Rule>>(
        &self,
        result: Tensor,
        rule: R,
        site: WriteSite,
    ) -> Result<()> {
        let recording = grad_mode::is_grad_enabled() && !self.is_volatile();
        if recording && self.requires_grad() {
            match self.view_base() {
                Some(base) if base.is_leaf() => return Err(Error::ViewOfLeafInplace),
                Some(_) => self.check_multi_output_view()?,
                None if self.is_leaf() => return Err(Error::LeafInplace),
                None => {}
            }
        }
        // The node's input is the old history: recorded before the data changes.
        let out = if recording {
            Variable::record(result.clone(), &[self], |_, _| (rule, SmallVec::new()))
        } else {
            Variable::from_tensor(result.clone())
        };
        let node = out.meta().grad_fn.take();
        let new = Arc::new(result);
        self.replace_tensor(new.clone());
        new.version_counter().bump(site);
        let (old_fn, old_nr, retains) = {
            let mut m = self.meta();
            // The accumulator's input metadata describes the old shape.
            m.grad_accumulator = None;
            if m.view_base.is_some() {
                m.view_version = new.version();
            }
            match node {
                Some(node) => {
                    let old_nr = std::mem::replace(&mut m.output_nr, 0);
                    (m.grad_fn.replace(node), old_nr, m.retains_grad)
                }
                None => (None, 0, false),
            }
        };
        if retains {
            // `retain_grad` follows the tensor to its new history (Note [Hooks]).
            self.move_retained_grad(old_fn.as_ref(), old_nr);
        }
        drop(old_fn);
        Ok(())
    }

    /// PyTorch's refusal of recorded in-place writes to an output of a multi-output view
    /// function (or a view of one): "Output 0 of Split is a view and is being modified
    /// inplace. This view is the output of a function that returns multiple views. ..."
    /// The name is the view's grad_fn's without its `Backward0` suffix; a view without
    /// history (its base does not require grad) gets PyTorch's no_grad sentence.
    fn check_multi_output_view(&self) -> Result<()> {
        let (multi_output, custom, grad_fn, output_nr) = {
            let m = self.meta();
            (
                m.view_multi_output,
                m.view_custom_function,
                m.grad_fn.clone(),
                m.output_nr,
            )
        };
        if custom {
            let name = grad_fn
                .and_then(|f| graph::node_name(f.id()).ok())
                .unwrap_or("Function");
            let name = name.trim_end_matches(|c: char| c.is_ascii_digit());
            let name = name.strip_suffix("Backward").unwrap_or(name);
            return Err(Error::CustomFunctionViewInplace(format!(
                "Output {output_nr} of {name} is a view and is being modified inplace."
            )));
        }
        if !multi_output {
            return Ok(());
        }
        let first = match grad_fn.and_then(|f| graph::node_name(f.id()).ok()) {
            Some(name) => {
                let name = name.trim_end_matches(|c: char| c.is_ascii_digit());
                let name = name.strip_suffix("Backward").unwrap_or(name);
                format!("Output {output_nr} of {name} is a view and is being modified inplace.")
            }
            None => "A view was created in no_grad mode and is being modified inplace with grad mode enabled.".to_string(),
        };
        Err(Error::MultiOutputViewInplace(first))
    }

    /// An in-place op on a view while recording: the base's history becomes CopySlices
    /// (the old base history, with the op applied at the view's place), and the view's
    /// history is re-derived from it.
    pub(crate) fn in_place_on_view(
        &self,
        base: &Variable,
        site: WriteSite,
        compute: impl FnOnce(&Variable) -> Result<Variable>,
    ) -> Result<()> {
        let layout = self.tensor().layout_within(&base.tensor()).ok_or_else(|| {
            Error::NotImplemented("rustgrad: in-place operation on a view of a non-contiguous tensor that takes part in autograd".into())
        })?;
        // CopySlices writes the view's gradient back at the view's place: an expanded
        // view (even under `fill_`, which may write one) has no single place per element.
        if layout.has_internal_overlap() {
            return Err(Error::InternalOverlap);
        }
        let out = compute(&self.twin()?)?;
        self.write_result(&out, site)?;
        let Some(inner) = out.meta().grad_fn.take() else {
            return Ok(());
        };
        graph::rebind_saved_outputs(inner.id(), self)?;
        self.rebase_view_history(base, layout, inner)
    }

    /// The checks before a recorded in-place write to this view of `base`, in PyTorch's
    /// order (Note [Views and in-place checks]): a view made under no_grad, an output of
    /// a multi-output view op or of a custom Function, a view of a leaf that requires
    /// grad.
    pub(crate) fn check_view_write(&self, base: &Variable) -> Result<()> {
        if !self.meta().view_created_with_grad {
            return Err(Error::NoGradViewInplace);
        }
        self.check_multi_output_view()?;
        if base.is_leaf() && self.requires_grad() {
            return Err(Error::ViewOfLeafInplace);
        }
        Ok(())
    }

    /// Makes `inner`, a node whose output 0 is this view's new value and whose edge 0
    /// leads into the view's old history, the write to this view at `layout` within
    /// `base`: the base's history becomes a CopySlices node owning `inner`, and the
    /// view's history is re-derived from it (an in-place op, a custom Function's
    /// `mark_dirty` on a view).
    pub(crate) fn rebase_view_history(
        &self,
        base: &Variable,
        layout: Layout,
        inner: NodeRef,
    ) -> Result<()> {
        let version = self.tensor().version();
        let (inner_edges, _) = graph::edges_and_sequence_nr(inner.id())?;
        let mut sources: SmallVec<[Option<EdgeSource>; 2]> = SmallVec::new();
        sources.push(base.gradient_edge());
        sources.extend(
            inner_edges
                .iter()
                .skip(1)
                .map(|e| e.map(EdgeSource::Borrowed)),
        );
        let node = graph::create_copy_slices(layout, inner, sources, (base.dtype(), base.shape()));
        let (old, old_nr, retains) = {
            let mut m = base.meta();
            let old_nr = std::mem::replace(&mut m.output_nr, 0);
            (m.grad_fn.replace(node), old_nr, m.retains_grad)
        };
        if retains {
            base.move_retained_grad(old.as_ref(), old_nr);
        }
        drop(old);
        self.derive_view_history(base, version);
        Ok(())
    }

    /// The overlap checks of every in-place write (Note [Overlapping writes]), before
    /// anything is computed or written.
    pub(crate) fn check_write_overlap(
        &self,
        operands: &[&Variable],
        overlap: Overlap,
    ) -> Result<()> {
        match overlap {
            Overlap::Forbidden => {
                let tensors: SmallVec<[_; 3]> = operands.iter().map(|o| o.tensor()).collect();
                let inputs: SmallVec<[&Tensor; 3]> = tensors.iter().map(|t| &**t).collect();
                self.tensor().check_write_overlap(&inputs)
            }
            Overlap::Idempotent => Ok(()),
        }
    }

    /// Checks an in-place result against this variable and writes it (one version bump).
    pub(crate) fn write_result(&self, out: &Variable, site: WriteSite) -> Result<()> {
        self.check_inference_write()?;
        if out.shape() != self.shape() {
            return Err(Error::ShapeMismatch {
                op: "in-place",
                message: format!(
                    "output with shape {:?} doesn't match the broadcast shape {:?}",
                    self.shape(),
                    out.shape()
                ),
            });
        }
        self.check_in_place_cast(out.dtype())?;
        self.tensor().copy_from(&out.tensor(), site)
    }

    /// PyTorch's in-place cast check ("result type Float can't be cast to the desired
    /// output type Int"): a `result` dtype that this variable cannot hold is refused.
    /// An op whose kernel may refuse the result dtype (`bitwise_and_` of an int tensor
    /// and a float) checks this first, as PyTorch's TensorIterator does.
    pub(crate) fn check_in_place_cast(&self, result: DType) -> Result<()> {
        if !self.dtype().can_cast_from(result) {
            return Err(Error::CastError {
                from: result.scalar_type_name(),
                to: self.dtype().scalar_type_name(),
            });
        }
        Ok(())
    }

    /// Makes this fresh alias of `input` (an input a custom Function returned as-is) a
    /// view of it whose recorded in-place writes raise, as PyTorch's.
    pub(crate) fn set_custom_function_view_of(&self, input: &Variable) {
        let base = input.view_base().unwrap_or_else(|| input.clone());
        let version = self.tensor().version();
        self.set_view_of(base, version, false);
        self.meta().view_custom_function = true;
    }

    /// A custom Function's differentiable output that is a view (made by its forward,
    /// under no_grad): as PyTorch's `CreationMeta::IN_CUSTOM_FUNCTION`, recorded
    /// in-place writes raise the custom-Function error instead of the no_grad one.
    pub(crate) fn mark_custom_function_view(&self) {
        let mut m = self.meta();
        if m.view_base.is_some() {
            m.view_created_with_grad = true;
            m.view_custom_function = true;
        }
    }

    /// Makes this variable output `output_nr` of `node` (a custom op's output, or a
    /// dirty input rebased onto it). The old `grad_fn` is dropped after unlocking.
    pub(crate) fn set_history(&self, node: NodeRef, output_nr: u32) {
        let old = {
            let mut m = self.meta();
            m.output_nr = output_nr;
            m.grad_fn.replace(node)
        };
        drop(old);
    }

    /// A variable with a private copy of this one's data and the same history.
    pub(crate) fn twin(&self) -> Result<Variable> {
        let m = self.meta_fresh();
        let twin = Variable::from_tensor(self.tensor().deep_clone()?);
        {
            let mut t = twin.meta();
            t.requires_grad = m.requires_grad;
            t.grad_fn = m.grad_fn.clone();
            t.output_nr = m.output_nr;
        }
        Ok(twin)
    }
}

/// Whether an in-place op may write a destination whose elements share memory.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Overlap {
    /// PyTorch's TensorIterator checks: internal and partial overlap raise.
    Forbidden,
    /// `fill_` / `zero_` write one value, so a shared location is harmless.
    Idempotent,
}
