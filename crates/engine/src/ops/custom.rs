//! Custom ops: a backward written by the user (PyTorch's `autograd.Function`), run as a
//! node of the graph. The forward is the caller's: it computes the outputs with grad
//! mode off, then [`Variable::record_custom`] records ONE node for all of them (Note
//! [Multi-output nodes]) whose rule calls a [`CustomBackward`]. The rule materializes
//! undefined output gradients (unless told not to), and checks the gradients it gets
//! back as PyTorch's `validate_outputs` does. See Note [Custom Functions].

use crate::autograd::grad_mode;
use crate::autograd::graph::{self, InputMeta, NodeKind};
use crate::autograd::saved::Saved;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Grads;
use crate::shape::Dims;
use crate::tensor::Tensor;
use crate::variable::{NodeId, NodeRef, SavedSlots, SavedTensor, Variable};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// A user-defined backward: what a custom op's node runs.
///
/// `grads` has one slot per output of the op (`None`: no gradient reached that output
/// and materialization is off); `saved` holds the tensors given as
/// [`CustomOptions::saved`], checked against in-place writes when read
/// ([`SavedValues::unpack`]); `needs_input_grad` says which inputs want a gradient. It returns one gradient per input (`None` where
/// there is none). Written with differentiable `Variable` ops, it also serves double
/// backward (`create_graph`: grad mode is on while it runs).
pub trait CustomBackward: Send + Sync + 'static {
    /// The node's name (`FBackward` for a Python class `F`): see [`intern_name`].
    fn name(&self) -> &'static str;
    /// The gradients of the inputs.
    fn backward(
        &self,
        grads: &[Option<Variable>],
        saved: &SavedValues,
        needs_input_grad: &[bool],
    ) -> Result<Vec<Option<Variable>>>;
}

/// The tensors a custom op saved ([`CustomOptions::saved`]), as its backward gets them.
/// They are checked against in-place writes when read, not before the backward runs,
/// as PyTorch's `ctx.saved_tensors`: a backward that does not read them does not fail.
/// Cheap to clone (it shares the tensors).
#[derive(Clone)]
pub struct SavedValues(SavedInner);

#[derive(Clone)]
enum SavedInner {
    /// Already unpacked (the rule was called with unpacked values).
    Ready(Vec<Option<Variable>>),
    /// The node's slots, and the node (a saved output gets its history back from it
    /// under `create_graph`).
    Packed(Vec<Option<SavedTensor>>, NodeId),
}

impl SavedValues {
    /// Number of saved slots.
    pub fn len(&self) -> usize {
        match &self.0 {
            SavedInner::Ready(v) => v.len(),
            SavedInner::Packed(s, _) => s.len(),
        }
    }

    /// Whether nothing was saved.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The saved tensors (`None` where `None` was saved), or PyTorch's "one of the
    /// variables needed for gradient computation has been modified by an inplace
    /// operation" error naming the tensor, the node that made it and where the write
    /// happened, when one was written since it was saved.
    pub fn unpack(&self) -> Result<Vec<Option<Variable>>> {
        match &self.0 {
            SavedInner::Ready(v) => Ok(v.clone()),
            SavedInner::Packed(slots, owner) => Saved {
                slots,
                owner: *owner,
            }
            .unpack()
            .map(|v| v.into_vec()),
        }
    }
}

impl From<Vec<Option<Variable>>> for SavedValues {
    /// Values already unpacked (e.g. to call a [`CustomBackward`] directly in a test).
    fn from(values: Vec<Option<Variable>>) -> Self {
        SavedValues(SavedInner::Ready(values))
    }
}

/// How [`Variable::record_custom`] treats the outputs (PyTorch's `ctx.mark_dirty`,
/// `ctx.mark_non_differentiable`, `ctx.save_for_backward`, `ctx.set_materialize_grads`).
pub struct CustomOptions<'a> {
    /// Inputs the forward modified in place: they take the node as their new history.
    pub dirty: &'a [Variable],
    /// Outputs that get no history.
    pub non_differentiable: &'a [Variable],
    /// Tensors kept for backward (inputs, outputs or others; `None` allowed).
    pub saved: &'a [Option<Variable>],
    /// Whether undefined output gradients reach the backward as zeros (PyTorch's
    /// default) or as `None`.
    pub materialize_grads: bool,
    /// Outputs that are not tensors (a Python Function may return any object): they
    /// count towards PyTorch's one-output rule for a dirty view.
    pub other_outputs: usize,
}

impl Default for CustomOptions<'_> {
    fn default() -> Self {
        CustomOptions {
            dirty: &[],
            non_differentiable: &[],
            saved: &[],
            materialize_grads: true,
            other_outputs: 0,
        }
    }
}

/// A `&'static str` for a custom op's name. Names are kept once each: a program that
/// defines N distinct Function classes leaks N strings, however many nodes it records.
pub fn intern_name(name: &str) -> &'static str {
    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let names = names.get_or_insert_with(HashSet::new);
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// A custom op's rule, shared (one pointer in the node).
#[derive(Clone)]
pub(crate) struct Rule(Arc<CustomRule>);

struct CustomRule {
    backward: Arc<dyn CustomBackward>,
    /// Dtype and shape of each input that has an edge (`None`: no gradient flows there),
    /// to check the returned gradients.
    inputs: Vec<Option<(DType, Dims)>>,
    /// Dtype and shape of each output, to materialize undefined gradients.
    outputs: Vec<(DType, Dims)>,
    materialize_grads: bool,
    /// The user's input behind each edge when they differ (edge `j` is input
    /// `order[j]`): a dirty view goes first, as CopySlices expects (see
    /// [`Variable::record_custom`]).
    order: Option<Vec<usize>>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Custom({})", self.0.backward.name())
    }
}

impl Rule {
    /// The node's name, as the user's backward gives it.
    pub(crate) fn name(&self) -> &'static str {
        self.0.backward.name()
    }

    /// [`Rule::apply_multi`] with the node's slots still packed: the user's backward
    /// unpacks (and so version-checks) them when it reads them.
    pub(crate) fn apply_saved(
        &self,
        saved: crate::autograd::saved::Saved<'_, Variable>,
        grads: &[Option<Variable>],
        needs: &[bool],
    ) -> Result<Grads> {
        let packed = SavedInner::Packed(saved.slots.to_vec(), saved.owner);
        self.apply_multi(&SavedValues(packed), grads, needs)
    }

    /// Runs the user's backward on every output slot and validates its gradients.
    pub(crate) fn apply_multi(
        &self,
        saved: &SavedValues,
        grads: &[Option<Variable>],
        needs: &[bool],
    ) -> Result<Grads> {
        let rule = &*self.0;
        let grads: Vec<Option<Variable>> = rule
            .outputs
            .iter()
            .enumerate()
            .map(
                |(i, (dtype, shape))| match grads.get(i).cloned().flatten() {
                    Some(g) => Ok(Some(g)),
                    None if rule.materialize_grads => {
                        Ok(Some(Variable::from_tensor(Tensor::zeros(shape, *dtype)?)))
                    }
                    None => Ok(None),
                },
            )
            .collect::<Result<_>>()?;
        let out = match &rule.order {
            None => rule.backward.backward(&grads, saved, needs)?,
            Some(order) => {
                // The user's backward sees its inputs in its own order.
                let mut user_needs = vec![false; order.len()];
                for (j, &i) in order.iter().enumerate() {
                    user_needs[i] = needs.get(j).copied().unwrap_or(false);
                }
                rule.backward.backward(&grads, saved, &user_needs)?
            }
        };
        let name = rule.backward.name();
        if out.len() != rule.inputs.len() {
            return Err(Error::InvalidArgument(format!(
                "function {name} returned an incorrect number of gradients (expected {}, got {})",
                rule.inputs.len(),
                out.len()
            )));
        }
        let mut out: Vec<Option<Variable>> = out;
        let take = |j: usize, out: &mut Vec<Option<Variable>>| -> (usize, Option<Variable>) {
            let i = rule.order.as_ref().map_or(j, |o| o[j]);
            (i, out[i].take())
        };
        (0..rule.inputs.len())
            .map(|j| match (take(j, &mut out), &rule.inputs[j]) {
                ((i, Some(g)), Some((dtype, shape))) => {
                    validate(name, i, g, *dtype, shape).map(Some)
                }
                // PyTorch checks only gradients that flow somewhere.
                _ => Ok(None),
            })
            .collect()
    }
}

/// PyTorch's `InputMetadata::maybe_reduce` and dtype cast: a gradient whose shape the
/// input's expands to is summed down to it; any other shape is an error.
fn validate(
    name: &str,
    index: usize,
    grad: Variable,
    dtype: DType,
    shape: &[usize],
) -> Result<Variable> {
    let gshape = grad.shape();
    let grad = if gshape.as_slice() == shape {
        grad
    } else if expandable(shape, &gshape) {
        grad.sum_to_size(shape)?
    } else {
        return Err(Error::InvalidArgument(format!(
            "Function {name} returned an invalid gradient at index {index} - got {:?} but expected shape compatible with {:?}",
            gshape.as_slice(),
            shape
        )));
    };
    // Any other dtype (even an integer one) is cast, as PyTorch's.
    if grad.dtype() != dtype {
        return grad.to_dtype(dtype);
    }
    Ok(grad)
}

/// Whether `shape` broadcasts to `target` (PyTorch's `is_expandable_to`).
fn expandable(shape: &[usize], target: &[usize]) -> bool {
    shape.len() <= target.len()
        && shape
            .iter()
            .rev()
            .zip(target.iter().rev())
            .all(|(&s, &t)| s == t || s == 1)
}

/// PyTorch's refusal of `mark_dirty` on a view by a Function with several outputs
/// (CopySlices wraps a node of one output).
const DIRTY_VIEW_OUTPUTS: &str = "If your Function modifies inplace an input that is a view \
     of another Tensor, your Function cannot return more than one Tensor. This is not supported \
     by the current autograd engine. You should either make sure the input is not a view (using \
     .clone() for example) or make your Function only return one Tensor (potentially splitting \
     it into two Functions: one doing the inplace that returns a single Tensor and a second one \
     that does the other operations). You can ask on the forum https://discuss.pytorch.org/ if \
     you need help to do this change.";

/// What each output of a custom op is.
struct OutputKind {
    input: bool,
    dirty: bool,
    differentiable: bool,
}

impl Variable {
    /// Records a custom op (PyTorch's `Function.apply` after `forward`): `outputs` were
    /// computed from `inputs` with grad mode off; when grad mode is on and an input
    /// requires grad, ONE node running `backward` becomes their history (output `i` is
    /// `(node, i)`) and its edges are the inputs' gradient edges. Returns the outputs to
    /// hand out: an input returned as-is comes back as a new alias with the node as its
    /// history, a dirty input is itself rebased onto the node, a non-differentiable
    /// output has no history (a detached alias when it is an input).
    ///
    /// A dirty input that is a view is written through its base, as PyTorch's
    /// `rebase_history`: the base's history becomes CopySlices owning the node (whose
    /// first edge is then the view's), and the view's is re-derived from it.
    ///
    /// Errors: a dirty input that is a leaf requiring grad ("a leaf Variable that
    /// requires grad has been used in an in-place operation."); a dirty view that the
    /// in-place checks refuse (a view of such a leaf, made under no_grad, ...), of a
    /// base that is not dense, or whose op has more than one output.
    pub fn record_custom(
        backward: Arc<dyn CustomBackward>,
        inputs: &[&Variable],
        outputs: &[Variable],
        options: CustomOptions<'_>,
    ) -> Result<Vec<Variable>> {
        Variable::record_custom_node(backward, inputs, outputs, options).map(|(outs, _)| outs)
    }

    /// [`Variable::record_custom`], also returning the node it recorded (`None` when
    /// nothing was recorded), e.g. to tie a Python `ctx` object to it.
    pub fn record_custom_node(
        backward: Arc<dyn CustomBackward>,
        inputs: &[&Variable],
        outputs: &[Variable],
        options: CustomOptions<'_>,
    ) -> Result<(Vec<Variable>, Option<NodeRef>)> {
        let needs: Vec<bool> = inputs.iter().map(|v| v.requires_grad()).collect();
        let executable = grad_mode::is_grad_enabled() && needs.iter().any(|&n| n);
        let kinds: Vec<OutputKind> = outputs
            .iter()
            .map(|out| OutputKind {
                input: inputs.iter().any(|i| i.same(out)),
                dirty: options.dirty.iter().any(|d| d.same(out)),
                differentiable: out.dtype().is_floating_point()
                    && !options.non_differentiable.iter().any(|n| n.same(out)),
            })
            .collect();
        if !executable {
            let outs = outputs
                .iter()
                .zip(&kinds)
                .map(|(out, k)| {
                    if k.input && !k.dirty {
                        out.detach()
                    } else {
                        out.clone()
                    }
                })
                .collect();
            return Ok((outs, None));
        }
        // A dirty view: (output index, its base, its layout within the base).
        let mut dirty_view: Option<(usize, Variable, Layout)> = None;
        for (nr, (out, k)) in outputs.iter().zip(&kinds).enumerate() {
            if k.dirty && k.differentiable {
                if out.is_leaf() && out.requires_grad() {
                    return Err(Error::InvalidArgument(
                        "a leaf Variable that requires grad has been used in an in-place operation.".into(),
                    ));
                }
                if let Some(base) = out.view_base() {
                    if outputs.len() + options.other_outputs > 1 {
                        return Err(Error::InvalidArgument(DIRTY_VIEW_OUTPUTS.into()));
                    }
                    out.check_view_write(&base)?;
                    let layout = out.tensor().layout_within(&base.tensor()).ok_or_else(|| {
                        Error::NotImplemented(
                            "rustgrad: in-place operation on a view of a non-contiguous tensor \
                             that takes part in autograd"
                                .into(),
                        )
                    })?;
                    if layout.has_internal_overlap() {
                        return Err(Error::InternalOverlap);
                    }
                    dirty_view = Some((nr, base, layout));
                }
            }
        }
        // CopySlices sends the view's part of the base gradient along the node's first
        // edge: the dirty view's input goes first.
        let order: Option<Vec<usize>> = dirty_view.as_ref().and_then(|(nr, _, _)| {
            let k = inputs.iter().position(|i| i.same(&outputs[*nr]))?;
            (k != 0).then(|| {
                std::iter::once(k)
                    .chain((0..inputs.len()).filter(|&i| i != k))
                    .collect()
            })
        });
        let inputs: Vec<&Variable> = match &order {
            Some(order) => order.iter().map(|&i| inputs[i]).collect(),
            None => inputs.to_vec(),
        };
        let needs: Vec<bool> = inputs.iter().map(|v| v.requires_grad()).collect();
        let name = backward.name();
        let saved: SavedSlots = options
            .saved
            .iter()
            .map(|s| {
                s.as_ref().map(|v| {
                    // A saved output is kept without its history (which would be this
                    // node: a cycle) and re-attached for double backward.
                    match outputs
                        .iter()
                        .zip(&kinds)
                        .position(|(o, k)| k.differentiable && o.same(v))
                    {
                        Some(nr) => SavedTensor::output_nr(v, name, nr as u32),
                        None => SavedTensor::input(v),
                    }
                })
            })
            .collect();
        let meta: InputMeta = outputs.iter().map(|o| (o.dtype(), o.shape())).collect();
        let rule = Rule(Arc::new(CustomRule {
            backward,
            inputs: inputs
                .iter()
                .zip(&needs)
                .map(|(v, &n)| n.then(|| (v.dtype(), v.shape())))
                .collect(),
            outputs: meta.iter().cloned().collect(),
            materialize_grads: options.materialize_grads,
            order,
        }));
        let edges = inputs
            .iter()
            .zip(&needs)
            .map(|(v, &n)| if n { v.gradient_edge() } else { None })
            .collect();
        let node: NodeRef = graph::create_node_with_sources(
            NodeKind::Op(crate::ops::OpRule(rule.into())),
            edges,
            saved,
            meta,
        );
        let mut wrapped = Vec::with_capacity(outputs.len());
        for (nr, (out, k)) in outputs.iter().zip(&kinds).enumerate() {
            wrapped.push(if !k.differentiable {
                if k.input {
                    out.detach()
                } else {
                    out.clone()
                }
            } else if k.input && !k.dirty {
                let alias = Variable::with_history(out.tensor().clone(), node.clone(), nr as u32);
                alias.set_custom_function_view_of(out);
                alias
            } else if let Some((_, base, layout)) =
                dirty_view.take_if(|(view_nr, _, _)| *view_nr == nr)
            {
                out.rebase_view_history(&base, layout, node.clone())?;
                out.clone()
            } else {
                out.set_history(node.clone(), nr as u32);
                if !k.dirty {
                    out.mark_custom_function_view();
                }
                out.clone()
            });
        }
        Ok((wrapped, Some(node)))
    }
}
