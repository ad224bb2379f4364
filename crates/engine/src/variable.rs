//! `Variable`: a tensor plus its autograd state (requires_grad, grad, grad_fn, volatile).
//! Every differentiable op lives here: it computes with `Tensor` and, when recording,
//! creates a graph node holding the op's backward rule and saved tensors.

use crate::autograd::formulas::OpKind;
use crate::autograd::graph::{self, Edge, NodeId, NodeKind, NodeRef};
use crate::autograd::saved::SavedTensor;
use crate::autograd::{engine, grad_mode};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{self, Dims};
use crate::storage::WriteSite;
use crate::tensor::{BinaryOp, CmpOp, Scalar, Tensor, UnaryOp};
use smallvec::{smallvec, SmallVec};
use std::panic::Location;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

/// A tensor that takes part in automatic differentiation.
///
/// Cloning a `Variable` is cheap and yields another handle to the same variable (the
/// same `.grad`, the same history), like assigning a Python reference.
#[derive(Clone)]
pub struct Variable(Arc<VariableInner>);

struct VariableInner {
    /// The data the variable was made with, until `set_data` replaces it.
    tensor: Tensor,
    /// The data given by `set_data` (`x.data = src`), once it has been called: rare, so
    /// reading the data costs one atomic load until then. See Note [Version counters].
    replaced: OnceLock<RwLock<Arc<Tensor>>>,
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
}

/// Saved-tensor slots of a node: `None` where the rule will not need it.
pub(crate) type SavedSlots = SmallVec<[Option<SavedTensor>; 2]>;

/// An input's gradient edge, owning the reference when it created the node.
pub(crate) enum EdgeSource {
    /// An edge to an existing node, referenced by someone else.
    Borrowed(Edge),
    /// An edge to a node just created for it (a leaf's AccumulateGrad).
    Owned(NodeRef),
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
            Some(base) if m.view_version != self.tensor().version() => {
                Some((base.clone(), m.view_created_with_grad))
            }
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
            NodeKind::Op(OpKind::AsStrided {
                base: base.shape(),
                layout,
            }),
            smallvec![edge],
            SmallVec::new(),
            (self.dtype(), self.shape()),
        );
        let old = {
            let mut m = self.meta();
            m.view_version = version;
            m.output_nr = 0;
            m.grad_fn.replace(node)
        };
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
        m.requires_grad || m.grad_fn.is_some()
    }

    /// Sets requires_grad on a leaf (PyTorch's `requires_grad_`).
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<()> {
        let mut m = self.meta();
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
        self.meta().grad.clone()
    }

    /// Replaces the accumulated gradient (`x.grad = g` / `x.grad = None`). The gradient
    /// must have this variable's shape and dtype and must not be the variable itself.
    pub fn set_grad(&self, grad: Option<Variable>) -> Result<()> {
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
                        match g.dtype() {
                            DType::F32 => "float",
                            DType::F64 => "double",
                            DType::I64 => "long int",
                            DType::Bool => "bool",
                        },
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

    /// A new leaf sharing this variable's data (and version counter), with no history.
    pub fn detach(&self) -> Variable {
        Variable::from_tensor(self.tensor().clone())
    }

    /// PyTorch's `x.data`: a leaf sharing this variable's elements, with no history and
    /// its own version counter, so writes through it (the legacy `p.data -= lr * g`)
    /// do not invalidate tensors saved from `x`, as in PyTorch.
    pub fn data(&self) -> Variable {
        Variable::from_tensor(self.tensor().with_own_version_counter())
    }

    /// PyTorch's `x.data = src`: from now on `x`'s data is `src`'s (the same elements,
    /// any shape and dtype), while `x` keeps its autograd identity (requires_grad, grad,
    /// grad_fn) and its version (a counter of its own from now on, starting at `x`'s
    /// version, as PyTorch's `set_data` keeps the version counter). Every handle of `x`
    /// sees the new data, including graph nodes that saved `x`; views of `x` made before
    /// keep the old elements. See Note [Version counters].
    pub fn set_data(&self, src: &Variable) -> Result<()> {
        if self.same(src) {
            return Ok(());
        }
        let new = src.tensor();
        if self.requires_grad() && !new.dtype().is_floating_point() {
            return Err(Error::DataRequiresGradNonFloat);
        }
        let old = self.tensor();
        let new = Arc::new(new.with_version_counter_at(old.version()));
        if old.dtype() != new.dtype() || old.shape() != new.shape() {
            // The accumulator's input metadata describes the old data.
            self.meta().grad_accumulator = None;
        }
        drop(old);
        let lock = self.0.replaced.get_or_init(|| RwLock::new(new.clone()));
        *lock.write().unwrap_or_else(|e| e.into_inner()) = new;
        Ok(())
    }

    /// Turns this variable into a leaf that does not require grad.
    pub fn detach_(&self) {
        let old = {
            let mut m = self.meta();
            m.requires_grad = false;
            m.output_nr = 0;
            m.grad_fn.take()
        };
        drop(old);
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
            NodeKind::AccumulateGrad(self.clone()),
            SmallVec::new(),
            SmallVec::new(),
            (self.dtype(), self.shape()),
        );
        m.grad_accumulator = Some(node.id());
        Some(EdgeSource::Owned(node))
    }

    // ----- recording ----------------------------------------------------------------

    /// Wraps an op's result: volatile if any input is, recorded (with the node that
    /// `build` describes) if grad mode is on and any input requires grad, plain otherwise.
    pub(crate) fn record(
        result: Tensor,
        inputs: &[&Variable],
        build: impl FnOnce(&[bool], &Variable) -> (OpKind, SavedSlots),
    ) -> Variable {
        let mut needs: SmallVec<[bool; 3]> = SmallVec::new();
        let mut volatile = false;
        for v in inputs {
            let m = v.meta_fresh();
            volatile |= m.volatile;
            needs.push(m.requires_grad || m.grad_fn.is_some());
        }
        if volatile {
            return Variable::new_volatile(result);
        }
        // Integer and bool results never carry history (Note [Differentiable dtypes]).
        if !needs.iter().any(|&n| n)
            || !grad_mode::is_grad_enabled()
            || !result.dtype().is_floating_point()
        {
            return Variable::from_tensor(result);
        }
        let meta = (result.dtype(), result.shape().into());
        let out = Variable::from_tensor(result);
        let (op, saved) = build(&needs, &out);
        let edges: SmallVec<[Option<EdgeSource>; 2]> = inputs
            .iter()
            .zip(&needs)
            .map(|(v, &n)| if n { v.gradient_edge() } else { None })
            .collect();
        let node = graph::create_node_with_sources(NodeKind::Op(op), edges, saved, meta);
        out.meta().grad_fn = Some(node);
        out
    }

    /// Like `record` for a view: the output also remembers its base.
    fn record_view(&self, result: Tensor, op: impl FnOnce() -> OpKind) -> Variable {
        let version = result.version();
        let out = Variable::record(result, &[self], |_, _| (op(), SmallVec::new()));
        let base = self.view_base().unwrap_or_else(|| self.clone());
        {
            let mut m = out.meta();
            m.view_created_with_grad = grad_mode::is_grad_enabled() && !m.volatile;
            m.view_base = Some(base);
            m.view_version = version;
        }
        out
    }

    // ----- elementwise ops ----------------------------------------------------------

    fn unary(&self, op: UnaryOp, kind: OpKind, save: Save) -> Result<Variable> {
        let result = self.tensor().unary(op)?;
        Ok(Variable::record(result, &[self], |_, out| {
            let saved = match save {
                Save::Nothing => smallvec![],
                Save::Input => smallvec![Some(SavedTensor::input(self))],
                Save::Output => smallvec![Some(SavedTensor::output(out, kind.name()))],
            };
            (kind, saved)
        }))
    }

    /// `-self`.
    pub fn neg(&self) -> Result<Variable> {
        self.unary(UnaryOp::Neg, OpKind::Neg, Save::Nothing)
    }

    /// `e^self`.
    pub fn exp(&self) -> Result<Variable> {
        self.unary(UnaryOp::Exp, OpKind::Exp, Save::Output)
    }

    /// Natural logarithm.
    pub fn log(&self) -> Result<Variable> {
        self.unary(UnaryOp::Log, OpKind::Log, Save::Input)
    }

    /// Square root.
    pub fn sqrt(&self) -> Result<Variable> {
        self.unary(UnaryOp::Sqrt, OpKind::Sqrt, Save::Output)
    }

    /// Hyperbolic tangent.
    pub fn tanh(&self) -> Result<Variable> {
        self.unary(UnaryOp::Tanh, OpKind::Tanh, Save::Output)
    }

    /// Logistic sigmoid.
    pub fn sigmoid(&self) -> Result<Variable> {
        self.unary(UnaryOp::Sigmoid, OpKind::Sigmoid, Save::Output)
    }

    /// `max(self, 0)`.
    pub fn relu(&self) -> Result<Variable> {
        self.unary(UnaryOp::Relu, OpKind::Relu, Save::Output)
    }

    /// Absolute value.
    pub fn abs(&self) -> Result<Variable> {
        self.unary(UnaryOp::Abs, OpKind::Abs, Save::Input)
    }

    /// Sign (-1, 0, 1); its gradient is zero.
    pub fn sign(&self) -> Result<Variable> {
        self.unary(UnaryOp::Sign, OpKind::Sign, Save::Nothing)
    }

    /// `self ** exponent` for a scalar exponent.
    pub fn pow_scalar(&self, exponent: f64) -> Result<Variable> {
        self.pow_scalar_value(Scalar::Float(exponent))
    }

    /// `self ** exponent` for a Python-style scalar: `int_tensor ** 2` stays int64 and
    /// exact, `int_tensor ** 2.0` is float32 (see [`Tensor::pow_scalar`]).
    pub fn pow_scalar_value(&self, exponent: Scalar) -> Result<Variable> {
        let result = self.tensor().pow_scalar(exponent)?;
        let exponent = exponent.to_f64();
        Ok(Variable::record(result, &[self], |_, _| {
            (
                OpKind::PowScalar { exponent },
                smallvec![Some(SavedTensor::input(self))],
            )
        }))
    }

    /// Clamps into `[min, max]`.
    pub fn clamp(&self, min: Option<f64>, max: Option<f64>) -> Result<Variable> {
        self.clamp_scalar(min.map(Scalar::Float), max.map(Scalar::Float))
    }

    /// Clamps into `[min, max]` with Python-style scalar bounds: the result dtype
    /// follows PyTorch's promotion (an int64 tensor clamped to 2.5 is float32) and
    /// integer bounds are exact.
    pub fn clamp_scalar(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<Variable> {
        let result = self.tensor().clamp(min, max)?;
        let (min, max) = (min.map(Scalar::to_f64), max.map(Scalar::to_f64));
        Ok(Variable::record(result, &[self], |_, _| {
            (
                OpKind::Clamp { min, max },
                smallvec![Some(SavedTensor::input(self))],
            )
        }))
    }

    fn binary(&self, other: &Variable, op: BinaryOp) -> Result<Variable> {
        let result = self.tensor().binary(&other.tensor(), op)?;
        let (a, b): (Dims, Dims) = (self.shape(), other.shape());
        Ok(Variable::record(result, &[self, other], |needs, out| {
            let save_if = |cond: bool, v: &Variable| cond.then(|| SavedTensor::input(v));
            match op {
                BinaryOp::Add => (OpKind::Add { a, b }, smallvec![]),
                BinaryOp::Sub => (
                    OpKind::Sub {
                        a,
                        b,
                        reversed: false,
                    },
                    smallvec![],
                ),
                BinaryOp::Mul => (
                    OpKind::Mul { a, b },
                    smallvec![save_if(needs[1], self), save_if(needs[0], other)],
                ),
                BinaryOp::Div => (
                    OpKind::Div { a, b },
                    smallvec![save_if(needs[1], self), Some(SavedTensor::input(other))],
                ),
                BinaryOp::Pow => (
                    OpKind::Pow { a, b },
                    smallvec![
                        Some(SavedTensor::input(self)),
                        Some(SavedTensor::input(other)),
                        save_if(needs[1], out).map(|_| SavedTensor::output(out, "PowBackward1")),
                    ],
                ),
            }
        }))
    }

    /// `self + other` with broadcasting.
    pub fn add(&self, other: &Variable) -> Result<Variable> {
        self.binary(other, BinaryOp::Add)
    }

    /// `self - other` with broadcasting.
    pub fn sub(&self, other: &Variable) -> Result<Variable> {
        self.binary(other, BinaryOp::Sub)
    }

    /// `self * other` with broadcasting.
    pub fn mul(&self, other: &Variable) -> Result<Variable> {
        self.binary(other, BinaryOp::Mul)
    }

    /// `self / other` with broadcasting (true division).
    pub fn div(&self, other: &Variable) -> Result<Variable> {
        self.binary(other, BinaryOp::Div)
    }

    /// `self ** other` with broadcasting.
    pub fn pow(&self, other: &Variable) -> Result<Variable> {
        self.binary(other, BinaryOp::Pow)
    }

    /// A 0-d constant for a Python-style scalar operand, with PyTorch's "wrapped
    /// number" promotion: a scalar never widens a tensor of its own kind, so
    /// `float32_tensor * 2.5` stays float32 and `int_tensor * 2.5` becomes float32.
    /// A bool stays a bool 0-d tensor, as PyTorch's wrapped number does: bool is the
    /// lowest category, so it never changes the result type, and ops that refuse bool
    /// operands (subtraction) still see one.
    pub fn wrap_scalar(&self, value: Scalar) -> Variable {
        let dtype = match value {
            Scalar::Bool(_) => DType::Bool,
            _ => value.result_type_with(self.dtype()),
        };
        Variable::from_tensor(Tensor::from_scalar(value, dtype))
    }

    /// `self + s`.
    pub fn add_scalar(&self, s: f64) -> Result<Variable> {
        self.add(&self.wrap_scalar(Scalar::Float(s)))
    }

    /// `self * s`.
    pub fn mul_scalar(&self, s: f64) -> Result<Variable> {
        self.mul(&self.wrap_scalar(Scalar::Float(s)))
    }

    /// `self / s`.
    pub fn div_scalar(&self, s: f64) -> Result<Variable> {
        self.div(&self.wrap_scalar(Scalar::Float(s)))
    }

    /// `s - self` (PyTorch's `rsub`).
    pub fn rsub_scalar(&self, s: f64) -> Result<Variable> {
        self.rsub(&self.wrap_scalar(Scalar::Float(s)))
    }

    /// `other - self`, recorded as RsubBackward1 (used for `scalar - tensor`).
    pub fn rsub(&self, other: &Variable) -> Result<Variable> {
        let result = other.tensor().binary(&self.tensor(), BinaryOp::Sub)?;
        let (a, b): (Dims, Dims) = (other.shape(), self.shape());
        Ok(Variable::record(result, &[other, self], |_, _| {
            (
                OpKind::Sub {
                    a,
                    b,
                    reversed: true,
                },
                smallvec![],
            )
        }))
    }

    /// Elementwise comparison; the bool result never requires grad.
    pub fn compare(&self, other: &Variable, op: CmpOp) -> Result<Variable> {
        Ok(Variable::from_tensor(
            self.tensor().compare(&other.tensor(), op)?,
        ))
    }

    /// `cond ? a : b` elementwise with broadcasting.
    pub fn where_cond(cond: &Tensor, a: &Variable, b: &Variable) -> Result<Variable> {
        let result = Tensor::where_cond(cond, &a.tensor(), &b.tensor())?;
        let (sa, sb): (Dims, Dims) = (a.shape(), b.shape());
        Ok(Variable::record(result, &[a, b], |_, _| {
            (
                OpKind::Where { a: sa, b: sb },
                smallvec![Some(SavedTensor::input(&Variable::from_tensor(
                    cond.clone()
                )))],
            )
        }))
    }

    // ----- reductions ---------------------------------------------------------------

    fn reduce_dims(&self, dims: Option<&[i64]>) -> Result<Dims> {
        match dims {
            None => Ok((0..self.dim()).collect()),
            // PyTorch: an empty dim list reduces over every dim, like no dim at all.
            Some([]) => Ok((0..self.dim()).collect()),
            Some(ds) => {
                let mut out: Dims = SmallVec::new();
                for &d in ds {
                    let w = shape::wrap_dim(d, self.dim())?;
                    if out.contains(&w) {
                        return Err(Error::InvalidArgument(format!(
                            "dim {w} appears multiple times in the list of dims"
                        )));
                    }
                    out.push(w);
                }
                // A 0-d tensor reduced over dim 0 / -1 reduces nothing.
                if self.dim() == 0 {
                    out.clear();
                }
                Ok(out)
            }
        }
    }

    /// Sum of all elements (a 0-d variable).
    pub fn sum(&self) -> Result<Variable> {
        self.sum_impl(None, false)
    }

    /// Sum over `dims` (negative dims allowed), keeping them as size 1 if `keepdim`.
    pub fn sum_dims(&self, dims: &[i64], keepdim: bool) -> Result<Variable> {
        self.sum_impl(Some(dims), keepdim)
    }

    fn sum_impl(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Variable> {
        let wrapped = self.reduce_dims(dims)?;
        let result = self.tensor().sum_dims(&wrapped, keepdim)?;
        let input: Dims = self.shape();
        Ok(Variable::record(result, &[self], |_, _| {
            let dims = dims.map(|_| wrapped.clone());
            (
                OpKind::Sum {
                    input,
                    dims,
                    keepdim,
                },
                smallvec![],
            )
        }))
    }

    /// Mean of all elements.
    pub fn mean(&self) -> Result<Variable> {
        self.mean_impl(None, false)
    }

    /// Mean over `dims`, keeping them as size 1 if `keepdim`.
    pub fn mean_dims(&self, dims: &[i64], keepdim: bool) -> Result<Variable> {
        self.mean_impl(Some(dims), keepdim)
    }

    fn mean_impl(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Variable> {
        if !self.dtype().is_floating_point() {
            return Err(Error::dtype("mean", format!(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                self.dtype().scalar_type_name()
            )));
        }
        let wrapped = self.reduce_dims(dims)?;
        let count: usize = wrapped.iter().map(|&d| self.shape()[d]).product();
        let sum = self.tensor().sum_dims(&wrapped, keepdim)?;
        let result = sum.binary(&Tensor::scalar(count as f64, self.dtype()), BinaryOp::Div)?;
        let input: Dims = self.shape();
        Ok(Variable::record(result, &[self], |_, _| {
            let dims = dims.map(|_| wrapped.clone());
            (
                OpKind::Mean {
                    input,
                    dims,
                    keepdim,
                    count,
                },
                smallvec![],
            )
        }))
    }

    /// Reduces a broadcast gradient back to `shape` by summing.
    pub fn sum_to_size(&self, shape: &[usize]) -> Result<Variable> {
        if self.shape().as_slice() == shape {
            return Ok(self.clone());
        }
        let lead = self.dim().saturating_sub(shape.len());
        let mut dims: Vec<i64> = (0..lead as i64).collect();
        for (i, &s) in shape.iter().enumerate() {
            if s == 1 && self.shape().get(lead + i) != Some(&1) {
                dims.push((lead + i) as i64);
            }
        }
        let target: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        if dims.is_empty() {
            // Nothing to sum (an empty dim list would mean "all dims").
            return self.reshape(&target);
        }
        self.sum_dims(&dims, true)?.reshape(&target)
    }

    // ----- matmul -------------------------------------------------------------------

    /// Matrix product with PyTorch's `matmul` semantics (1-D operands are promoted and
    /// the added dim removed; batch dims broadcast).
    pub fn matmul(&self, other: &Variable) -> Result<Variable> {
        match (self.dim(), other.dim()) {
            (0, _) | (_, 0) => Err(Error::InvalidArgument(format!(
                "both arguments to matmul need to be at least 1D, but they are {}D and {}D",
                self.dim(),
                other.dim()
            ))),
            (1, 1) => {
                if self.shape() != other.shape() {
                    return Err(Error::ShapeMismatch {
                        op: "dot",
                        message: format!(
                            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
                            self.numel(), other.numel(), self.numel(), other.numel()
                        ),
                    });
                }
                self.unsqueeze(0)?
                    .matmul(&other.unsqueeze(1)?)?
                    .reshape(&[])
            }
            (1, _) => self.unsqueeze(0)?.matmul(other)?.squeeze_dim(-2),
            (_, 1) => self.matmul(&other.unsqueeze(1)?)?.squeeze_dim(-1),
            (da, db) => {
                let result = self.tensor().matmul_nd(&other.tensor())?;
                let (a, b): (Dims, Dims) = (self.shape(), other.shape());
                let batched = da > 2 || db > 2;
                Ok(Variable::record(result, &[self, other], |needs, _| {
                    let save_if = |cond: bool, v: &Variable| cond.then(|| SavedTensor::input(v));
                    (
                        OpKind::Matmul { a, b, batched },
                        smallvec![save_if(needs[1], self), save_if(needs[0], other)],
                    )
                }))
            }
        }
    }

    // ----- views and copies ---------------------------------------------------------

    /// A view with another shape (one size may be -1).
    pub fn view(&self, shape: &[i64]) -> Result<Variable> {
        let result = self.tensor().view(shape)?;
        let input: Dims = self.shape();
        Ok(self.record_view(result, || OpKind::View {
            input,
            copied: false,
        }))
    }

    /// Like `view`, copying when the strides do not allow a view.
    pub fn reshape(&self, shape: &[i64]) -> Result<Variable> {
        let target = shape::infer_shape(shape, self.numel())?;
        if self.tensor().can_view(&target) {
            return self.view(shape);
        }
        crate::tensor::check_allocation(self.numel(), self.dtype())?;
        let result = self.tensor().reshape(shape)?;
        let input: Dims = self.shape();
        Ok(Variable::record(result, &[self], |_, _| {
            (
                OpKind::View {
                    input,
                    copied: true,
                },
                smallvec![],
            )
        }))
    }

    /// Swaps two dims.
    pub fn transpose(&self, dim0: i64, dim1: i64) -> Result<Variable> {
        let result = self.tensor().transpose(dim0, dim1)?;
        let nd = self.dim();
        let (d0, d1) = (shape::wrap_dim(dim0, nd)?, shape::wrap_dim(dim1, nd)?);
        Ok(self.record_view(result, || OpKind::Transpose {
            dim0: d0,
            dim1: d1,
            t: false,
        }))
    }

    /// Transpose of a tensor with at most 2 dims.
    pub fn t(&self) -> Result<Variable> {
        let result = self.tensor().t()?;
        let (d0, d1) = if self.dim() == 2 { (0, 1) } else { (0, 0) };
        Ok(self.record_view(result, || OpKind::Transpose {
            dim0: d0,
            dim1: d1,
            t: true,
        }))
    }

    /// Reorders dims.
    pub fn permute(&self, dims: &[i64]) -> Result<Variable> {
        let result = self.tensor().permute(dims)?;
        let wrapped = dims
            .iter()
            .map(|&d| shape::wrap_dim(d, self.dim()))
            .collect::<Result<Dims>>()?;
        Ok(self.record_view(result, || OpKind::Permute { dims: wrapped }))
    }

    /// Broadcasts to `sizes` (-1 keeps a size) without copying.
    pub fn expand(&self, sizes: &[i64]) -> Result<Variable> {
        let result = self.tensor().expand(sizes)?;
        let input: Dims = self.shape();
        Ok(self.record_view(result, || OpKind::Expand { input }))
    }

    /// Inserts a size-1 dim.
    pub fn unsqueeze(&self, dim: i64) -> Result<Variable> {
        let result = self.tensor().unsqueeze(dim)?;
        let d = shape::wrap_insert_dim(dim, self.dim())?;
        Ok(self.record_view(result, || OpKind::Unsqueeze { dim: d }))
    }

    /// Removes every size-1 dim.
    pub fn squeeze(&self) -> Result<Variable> {
        let result = self.tensor().squeeze();
        let input: Dims = self.shape();
        Ok(self.record_view(result, || OpKind::Squeeze { input, all: true }))
    }

    /// Removes `dim` if it has size 1.
    pub fn squeeze_dim(&self, dim: i64) -> Result<Variable> {
        let result = self.tensor().squeeze_dim(dim)?;
        let input: Dims = self.shape();
        Ok(self.record_view(result, || OpKind::Squeeze { input, all: false }))
    }

    /// `self[..., start:end:step, ...]` along `dim` (Python's bound clamping).
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Variable> {
        let result = self.tensor().slice(dim, start, end, step)?;
        let d = shape::wrap_dim(dim, self.dim())?;
        let (s, e) = self.tensor().slice_params(d, start, end);
        let input: Dims = self.shape();
        Ok(self.record_view(result, || OpKind::Slice {
            input,
            dim: d,
            start: s,
            end: e,
            step: step as usize,
        }))
    }

    /// `self[..., index, ...]` along `dim`, removing the dim.
    pub fn select(&self, dim: i64, index: i64) -> Result<Variable> {
        let result = self.tensor().select(dim, index)?;
        let d = shape::wrap_dim(dim, self.dim())?;
        let i = if index < 0 {
            index + self.shape()[d] as i64
        } else {
            index
        } as usize;
        let input: Dims = self.shape();
        Ok(self.record_view(result, || OpKind::Select {
            input,
            dim: d,
            index: i,
        }))
    }

    /// A zero tensor of `shape` with `self` written into the slice (slice's backward).
    pub(crate) fn slice_scatter(
        &self,
        shape: &[usize],
        dim: usize,
        start: usize,
        end: usize,
        step: usize,
    ) -> Result<Variable> {
        let out = Tensor::zeros(shape, self.dtype());
        out.slice(
            dim as i64,
            Some(start as i64),
            Some(end as i64),
            step as i64,
        )?
        .copy_from(&self.tensor(), WriteSite::Rust(Location::caller()))?;
        Ok(Variable::record(out, &[self], |_, _| {
            (
                OpKind::SliceScatter {
                    dim,
                    start,
                    end,
                    step,
                },
                smallvec![],
            )
        }))
    }

    /// A zero tensor of `shape` with `self` written at `index` of `dim` (select's backward).
    pub(crate) fn select_scatter(
        &self,
        shape: &[usize],
        dim: usize,
        index: usize,
    ) -> Result<Variable> {
        let out = Tensor::zeros(shape, self.dtype());
        out.select(dim as i64, index as i64)?
            .copy_from(&self.tensor(), WriteSite::Rust(Location::caller()))?;
        Ok(Variable::record(out, &[self], |_, _| {
            (OpKind::SelectScatter { dim, index }, smallvec![])
        }))
    }

    /// The elements of this tensor (made contiguous) seen through `layout`.
    pub(crate) fn as_strided(&self, layout: &Layout) -> Result<Variable> {
        let c = self.contiguous()?;
        let result = c.tensor().as_strided(layout)?;
        let base: Dims = c.shape();
        Ok(Variable::record(result, &[&c], |_, _| {
            (
                OpKind::AsStrided {
                    base,
                    layout: layout.clone(),
                },
                smallvec![],
            )
        }))
    }

    /// Zeros of `shape` with `self` written at the elements `layout` selects.
    pub(crate) fn as_strided_scatter(&self, shape: &[usize], layout: &Layout) -> Result<Variable> {
        let out = Tensor::zeros(shape, self.dtype());
        out.as_strided(layout)?
            .copy_from(&self.tensor(), WriteSite::Rust(Location::caller()))?;
        Ok(Variable::record(out, &[self], |_, _| {
            (
                OpKind::AsStridedScatter {
                    layout: layout.clone(),
                },
                smallvec![],
            )
        }))
    }

    /// A view of the whole tensor (`x[...]`, `x[()]`): a distinct variable, so changing
    /// its autograd state (`requires_grad_`, `detach_`, `.grad`) leaves `self` alone.
    pub fn alias(&self) -> Variable {
        self.record_view(self.tensor().clone(), || OpKind::Alias)
    }

    /// A copy into new contiguous storage, differentiable.
    pub fn clone_data(&self) -> Result<Variable> {
        crate::tensor::check_allocation(self.numel(), self.dtype())?;
        self.record_clone(self.tensor().deep_clone()?)
    }

    /// `clone()` as PyTorch's default `memory_format=torch.preserve_format`: a dense
    /// tensor keeps its strides, any other is copied contiguous. Differentiable.
    pub fn clone_preserving_strides(&self) -> Result<Variable> {
        crate::tensor::check_allocation(self.numel(), self.dtype())?;
        self.record_clone(self.tensor().clone_preserving_strides()?)
    }

    fn record_clone(&self, result: Tensor) -> Result<Variable> {
        Ok(Variable::record(result, &[self], |_, _| {
            (OpKind::Clone, smallvec![])
        }))
    }

    /// `self` when contiguous, else a differentiable contiguous copy.
    pub fn contiguous(&self) -> Result<Variable> {
        if self.tensor().is_contiguous() {
            return Ok(self.clone());
        }
        self.clone_data()
    }

    /// The values converted to `dtype`, differentiable between float dtypes.
    pub fn to_dtype(&self, dtype: DType) -> Result<Variable> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let result = self.tensor().to_dtype(dtype)?;
        let from = self.dtype();
        if !dtype.is_floating_point() {
            return Ok(Variable::from_tensor(result));
        }
        Ok(Variable::record(result, &[self], |_, _| {
            (OpKind::ToCopy { from }, smallvec![])
        }))
    }

    // ----- in-place ops -------------------------------------------------------------

    /// Runs an in-place op: `compute(self_like)` gives the new value, which is written
    /// into this variable's storage (one version bump); when recording, this variable's
    /// history is rebased onto the op's node. See Note [In-place ops].
    fn in_place(
        &self,
        other: Option<&Variable>,
        site: WriteSite,
        compute: impl FnOnce(&Variable) -> Result<Variable>,
    ) -> Result<()> {
        self.in_place_impl(other, Overlap::Forbidden, site, compute)
    }

    /// `in_place`, where `overlap` says whether the destination may have elements that
    /// share memory (only `fill_`/`zero_`, which are idempotent, allow it).
    fn in_place_impl(
        &self,
        other: Option<&Variable>,
        overlap: Overlap,
        site: WriteSite,
        compute: impl FnOnce(&Variable) -> Result<Variable>,
    ) -> Result<()> {
        let volatile = self.is_volatile() || other.is_some_and(|o| o.is_volatile());
        // An integer or bool tensor written in place stays without history whatever
        // the operand (Note [Differentiable dtypes]).
        let recording = grad_mode::is_grad_enabled()
            && !volatile
            && self.dtype().is_floating_point()
            && (self.requires_grad() || other.is_some_and(|o| o.requires_grad()));
        let view = self.view_base();
        let recording = recording
            || (grad_mode::is_grad_enabled()
                && !volatile
                && self.dtype().is_floating_point()
                && view.as_ref().is_some_and(Variable::requires_grad));
        if recording {
            if let Some(base) = view {
                // Note [Views and in-place checks].
                if !self.meta().view_created_with_grad {
                    return Err(Error::NoGradViewInplace);
                }
                if base.is_leaf() && self.requires_grad() {
                    return Err(Error::ViewOfLeafInplace);
                }
                self.check_write_overlap(other, overlap)?;
                return self.in_place_on_view(&base, site, compute);
            }
            if self.is_leaf() && self.requires_grad() {
                return Err(Error::LeafInplace);
            }
        }
        self.check_write_overlap(other, overlap)?;
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
            let old = {
                let mut m = self.meta();
                m.output_nr = 0;
                std::mem::replace(&mut m.grad_fn, node)
            };
            drop(old);
        }
        Ok(())
    }

    /// An in-place op on a view while recording: the base's history becomes CopySlices
    /// (the old base history, with the op applied at the view's place), and the view's
    /// history is re-derived from it.
    fn in_place_on_view(
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
        let version = self.tensor().version();
        let Some(inner) = out.meta().grad_fn.take() else {
            return Ok(());
        };
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
        let old = {
            let mut m = base.meta();
            m.output_nr = 0;
            m.grad_fn.replace(node)
        };
        drop(old);
        self.derive_view_history(base, version);
        Ok(())
    }

    /// The overlap checks of every in-place write (Note [Overlapping writes]), before
    /// anything is computed or written.
    fn check_write_overlap(&self, other: Option<&Variable>, overlap: Overlap) -> Result<()> {
        match overlap {
            Overlap::Forbidden => {
                let other = other.map(Variable::tensor);
                let inputs: SmallVec<[&Tensor; 1]> = other.as_deref().into_iter().collect();
                self.tensor().check_write_overlap(&inputs)
            }
            Overlap::Idempotent => Ok(()),
        }
    }

    /// Checks an in-place result against this variable and writes it (one version bump).
    fn write_result(&self, out: &Variable, site: WriteSite) -> Result<()> {
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
        if !self.dtype().can_cast_from(out.dtype()) {
            return Err(Error::CastError {
                from: out.dtype().scalar_type_name(),
                to: self.dtype().scalar_type_name(),
            });
        }
        self.tensor().copy_from(&out.tensor(), site)
    }

    /// A variable with a private copy of this one's data and the same history.
    fn twin(&self) -> Result<Variable> {
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

    /// In-place `self += other`.
    #[track_caller]
    pub fn add_(&self, other: &Variable) -> Result<()> {
        self.in_place(Some(other), WriteSite::Rust(Location::caller()), |s| {
            s.add(other)
        })
    }

    /// In-place `self -= other`.
    #[track_caller]
    pub fn sub_(&self, other: &Variable) -> Result<()> {
        self.in_place(Some(other), WriteSite::Rust(Location::caller()), |s| {
            s.sub(other)
        })
    }

    /// In-place `self *= other`.
    #[track_caller]
    pub fn mul_(&self, other: &Variable) -> Result<()> {
        self.in_place(Some(other), WriteSite::Rust(Location::caller()), |s| {
            s.mul(other)
        })
    }

    /// In-place `self /= other`.
    #[track_caller]
    pub fn div_(&self, other: &Variable) -> Result<()> {
        self.in_place(Some(other), WriteSite::Rust(Location::caller()), |s| {
            s.div(other)
        })
    }

    /// In-place clamp.
    #[track_caller]
    pub fn clamp_(&self, min: Option<f64>, max: Option<f64>) -> Result<()> {
        self.clamp_scalar_(min.map(Scalar::Float), max.map(Scalar::Float))
    }

    /// In-place clamp with Python-style scalar bounds; a bound that would change the
    /// dtype (a float bound on an int64 tensor) is PyTorch's cast error.
    #[track_caller]
    pub fn clamp_scalar_(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<()> {
        self.in_place(None, WriteSite::Rust(Location::caller()), |s| {
            s.clamp_scalar(min, max)
        })
    }

    /// In-place relu.
    #[track_caller]
    pub fn relu_(&self) -> Result<()> {
        self.in_place(None, WriteSite::Rust(Location::caller()), |s| s.relu())
    }

    /// Fills with `value`.
    #[track_caller]
    pub fn fill_(&self, value: f64) -> Result<()> {
        self.fill_impl(
            Scalar::Float(value),
            false,
            WriteSite::Rust(Location::caller()),
        )
    }

    /// Fills with a Python-style scalar (integers exact, Note [Exact scalars]).
    #[track_caller]
    pub fn fill_scalar_(&self, value: Scalar) -> Result<()> {
        self.fill_impl(value, false, WriteSite::Rust(Location::caller()))
    }

    /// Fills with zeros.
    #[track_caller]
    pub fn zero_(&self) -> Result<()> {
        self.fill_impl(Scalar::Int(0), true, WriteSite::Rust(Location::caller()))
    }

    fn fill_impl(&self, value: Scalar, zero: bool, site: WriteSite) -> Result<()> {
        self.in_place_impl(None, Overlap::Idempotent, site, |s| {
            // A broadcast scalar: `copy_from` writes it without materialising it.
            let filled = Tensor::from_scalar(value, s.dtype()).broadcast_to(&s.shape())?;
            Ok(Variable::record(filled, &[s], |_, _| {
                (OpKind::Fill { zero }, smallvec![])
            }))
        })
    }

    /// Copies `src` (broadcast, converted) into this variable.
    #[track_caller]
    pub fn copy_(&self, src: &Variable) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        let (src_shape, src_dtype): (Dims, DType) = (src.shape(), src.dtype());
        let dtype = self.dtype();
        self.in_place(Some(src), site, |s| {
            let values =
                src.tensor()
                    .broadcast_to(&s.shape())
                    .map_err(|_| Error::ShapeMismatch {
                        op: "copy_",
                        message: format!(
                            "The size of tensor a ({:?}) must match the size of tensor b ({:?})",
                            s.shape(),
                            src.shape()
                        ),
                    })?;
            // Not made contiguous: a broadcast scalar is written without materialising
            // it (`Tensor::copy_from`).
            let values = values.to_dtype(dtype)?;
            Ok(Variable::record(values, &[s, src], |_, _| {
                (
                    OpKind::Copy {
                        src: src_shape,
                        src_dtype,
                    },
                    smallvec![],
                )
            }))
        })
    }

    // ----- backward -----------------------------------------------------------------

    /// Backpropagates from this scalar (gradient 1), accumulating into the leaves' `.grad`.
    pub fn backward(&self) -> Result<()> {
        engine::backward(std::slice::from_ref(self), &[None], false, false)
    }

    /// Backpropagates with an explicit `gradient` (needed for non-scalars).
    pub fn backward_with(
        &self,
        gradient: Option<&Variable>,
        retain_graph: bool,
        create_graph: bool,
    ) -> Result<()> {
        engine::backward(
            std::slice::from_ref(self),
            &[gradient.cloned()],
            retain_graph,
            create_graph,
        )
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
        let sum = old.tensor().binary(&grad.tensor(), BinaryOp::Add)?;
        if old.tensor().layout().is_non_overlapping() {
            old.tensor()
                .copy_from(&sum, WriteSite::Rust(Location::caller()))?;
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
}

/// What a unary op saves for backward.
/// Whether an in-place op may write a destination whose elements share memory.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Overlap {
    /// PyTorch's TensorIterator checks: internal and partial overlap raise.
    Forbidden,
    /// `fill_` / `zero_` write one value, so a shared location is harmless.
    Idempotent,
}

#[derive(Copy, Clone)]
enum Save {
    Nothing,
    Input,
    Output,
}
