//! The differentiable ops, one module per family. A family file holds its ops' forward
//! (the `Variable` methods, which compute through `Tensor` and record a graph node) and
//! their backward rules side by side: a family `Rule` enum with PyTorch's grad_fn names
//! and an `apply` written with differentiable ops, so the same rules serve double
//! backward. A node holds a [`Rule`], which nests the family rules (no allocation per
//! node). See Note [Op families].

pub(crate) mod activation;
pub(crate) mod attention;
pub(crate) mod binary;
pub(crate) mod conv;
pub(crate) mod copy;
pub(crate) mod custom;
pub(crate) mod dropout;
pub(crate) mod embedding;
pub(crate) mod index;
pub(crate) mod inplace;
pub(crate) mod linalg;
pub(crate) mod logical;
pub(crate) mod loss;
pub(crate) mod norm;
pub(crate) mod pool;
pub(crate) mod reduce;
pub(crate) mod rnn;
pub(crate) mod shape;
pub(crate) mod spatial;
pub(crate) mod ternary;
pub(crate) mod unary;

use crate::autograd::NodeRule;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::variable::Variable;

/// Gradients for each input of a node (`None` where not needed).
pub(crate) type Grads = crate::autograd::Grads<Variable>;

/// The backward rule of a recorded op, by family.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// A rule of `unary.rs`.
    Unary(unary::Rule),
    /// A rule of `binary.rs`.
    Binary(binary::Rule),
    /// A rule of `reduce.rs`.
    Reduce(reduce::Rule),
    /// A rule of `linalg.rs`.
    Linalg(linalg::Rule),
    /// A rule of `shape.rs`.
    Shape(shape::Rule),
    /// A rule of `index.rs`.
    Index(index::Rule),
    /// A rule of `ternary.rs`.
    Ternary(ternary::Rule),
    /// A rule of `copy.rs`.
    Copy(copy::Rule),
    /// A rule of `inplace.rs`.
    Inplace(inplace::Rule),
    /// A user-defined backward (`custom.rs`).
    Custom(custom::Rule),
    /// A rule of `spatial.rs`.
    Spatial(spatial::Rule),
    /// A rule of `loss.rs`.
    Loss(loss::Rule),
    /// A rule of `conv.rs`.
    Conv(conv::Rule),
    /// A rule of `pool.rs`.
    Pool(pool::Rule),
    /// A rule of `norm.rs`.
    Norm(norm::Rule),
    /// A rule of `activation.rs`.
    Activation(activation::Rule),
    /// A rule of `embedding.rs`.
    Embedding(embedding::Rule),
    /// A rule of `rnn.rs`.
    Rnn(rnn::Rule),
    /// A rule of `attention.rs`.
    Attention(attention::Rule),
    /// A fused elementwise chain of a replayed capture (Note [Capture and replay]).
    Fused(crate::jit::FusedRule),
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Unary(r) => r.name(),
            Rule::Binary(r) => r.name(),
            Rule::Reduce(r) => r.name(),
            Rule::Linalg(r) => r.name(),
            Rule::Shape(r) => r.name(),
            Rule::Index(r) => r.name(),
            Rule::Ternary(r) => r.name(),
            Rule::Copy(r) => r.name(),
            Rule::Inplace(r) => r.name(),
            Rule::Custom(r) => r.name(),
            Rule::Spatial(r) => r.name(),
            Rule::Loss(r) => r.name(),
            Rule::Conv(r) => r.name(),
            Rule::Pool(r) => r.name(),
            Rule::Norm(r) => r.name(),
            Rule::Activation(r) => r.name(),
            Rule::Embedding(r) => r.name(),
            Rule::Attention(r) => r.name(),
            Rule::Rnn(r) => r.name(),
            Rule::Fused(r) => r.name(),
        }
    }

    /// The gradients of the node's inputs given `grad`, the gradient of its output, and
    /// its saved tensors; `needs[i]` says whether input `i` wants one.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        match self {
            Rule::Unary(r) => r.apply(saved, grad, needs),
            Rule::Binary(r) => r.apply(saved, grad, needs),
            Rule::Reduce(r) => r.apply(saved, grad, needs),
            Rule::Linalg(r) => r.apply(saved, grad, needs),
            Rule::Shape(r) => r.apply(saved, grad, needs),
            Rule::Index(r) => r.apply(saved, grad, needs),
            Rule::Ternary(r) => r.apply(saved, grad, needs),
            Rule::Copy(r) => r.apply(saved, grad, needs),
            Rule::Inplace(r) => r.apply(saved, grad, needs),
            Rule::Custom(r) => r.apply_multi(&saved.to_vec().into(), &[Some(grad.clone())], needs),
            Rule::Spatial(r) => r.apply(saved, grad, needs),
            Rule::Loss(r) => r.apply(saved, grad, needs),
            Rule::Conv(r) => r.apply(saved, grad, needs),
            Rule::Pool(r) => r.apply(saved, grad, needs),
            Rule::Norm(r) => r.apply(saved, grad, needs),
            Rule::Activation(r) => r.apply(saved, grad, needs),
            Rule::Embedding(r) => r.apply(saved, grad, needs),
            Rule::Attention(r) => r.apply(saved, grad, needs),
            Rule::Rnn(r) => r.apply(saved, grad, needs),
            Rule::Fused(r) => r.apply(grad, needs),
        }
    }
}

/// A node's rule as the graph holds it: the [`Rule`] of an op family, opaque outside
/// the crate (autograd runs it through [`NodeRule`] and names no op).
#[derive(Clone, Debug)]
pub struct OpRule(pub(crate) Rule);

impl<R: Into<Rule>> From<R> for OpRule {
    fn from(rule: R) -> OpRule {
        OpRule(rule.into())
    }
}

impl NodeRule<Variable> for OpRule {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn calls_external(&self) -> bool {
        matches!(self.0, Rule::Custom(_))
    }

    fn apply_saved(
        &self,
        saved: crate::autograd::saved::Saved<'_, Variable>,
        grads: &[Option<Variable>],
        needs: &[bool],
    ) -> Result<Grads> {
        match &self.0 {
            // Checked when the user's backward reads them (Note [Custom Functions]).
            Rule::Custom(r) => r.apply_saved(saved, grads, needs),
            _ => self.apply(&saved.unpack()?, grads, needs),
        }
    }

    fn apply(
        &self,
        saved: &[Option<Variable>],
        grads: &[Option<Variable>],
        needs: &[bool],
    ) -> Result<Grads> {
        // Multi-output rules take every output's gradient (None: undefined, treated as
        // zeros). The others have one output, and the scheduler runs a node only when
        // some output received a gradient, so their slot 0 is set.
        match &self.0 {
            Rule::Shape(r) if r.is_multi_output() => r.apply_multi(grads),
            Rule::Reduce(r) if r.is_multi_output() => r.apply_multi(saved, grads),
            Rule::Custom(r) => r.apply_multi(&saved.to_vec().into(), grads, needs),
            Rule::Rnn(r) => r.apply_multi(saved, grads, needs),
            rule => match grads.first().and_then(Option::as_ref) {
                Some(grad) => rule.apply(saved, grad, needs),
                None => Ok(needs.iter().map(|_| None).collect()),
            },
        }
    }
}

impl From<unary::Rule> for Rule {
    fn from(rule: unary::Rule) -> Rule {
        Rule::Unary(rule)
    }
}

impl From<binary::Rule> for Rule {
    fn from(rule: binary::Rule) -> Rule {
        Rule::Binary(rule)
    }
}

impl From<reduce::Rule> for Rule {
    fn from(rule: reduce::Rule) -> Rule {
        Rule::Reduce(rule)
    }
}

impl From<linalg::Rule> for Rule {
    fn from(rule: linalg::Rule) -> Rule {
        Rule::Linalg(rule)
    }
}

impl From<shape::Rule> for Rule {
    fn from(rule: shape::Rule) -> Rule {
        Rule::Shape(rule)
    }
}

impl From<index::Rule> for Rule {
    fn from(rule: index::Rule) -> Rule {
        Rule::Index(rule)
    }
}

impl From<ternary::Rule> for Rule {
    fn from(rule: ternary::Rule) -> Rule {
        Rule::Ternary(rule)
    }
}

impl From<copy::Rule> for Rule {
    fn from(rule: copy::Rule) -> Rule {
        Rule::Copy(rule)
    }
}

impl From<custom::Rule> for Rule {
    fn from(rule: custom::Rule) -> Rule {
        Rule::Custom(rule)
    }
}

impl From<spatial::Rule> for Rule {
    fn from(rule: spatial::Rule) -> Rule {
        Rule::Spatial(rule)
    }
}

impl From<loss::Rule> for Rule {
    fn from(rule: loss::Rule) -> Rule {
        Rule::Loss(rule)
    }
}

impl From<pool::Rule> for Rule {
    fn from(rule: pool::Rule) -> Rule {
        Rule::Pool(rule)
    }
}

impl From<norm::Rule> for Rule {
    fn from(rule: norm::Rule) -> Rule {
        Rule::Norm(rule)
    }
}

impl From<activation::Rule> for Rule {
    fn from(rule: activation::Rule) -> Rule {
        Rule::Activation(rule)
    }
}

impl From<embedding::Rule> for Rule {
    fn from(rule: embedding::Rule) -> Rule {
        Rule::Embedding(rule)
    }
}

impl From<attention::Rule> for Rule {
    fn from(rule: attention::Rule) -> Rule {
        Rule::Attention(rule)
    }
}

impl From<inplace::Rule> for Rule {
    fn from(rule: inplace::Rule) -> Rule {
        Rule::Inplace(rule)
    }
}

impl From<rnn::Rule> for Rule {
    fn from(rule: rnn::Rule) -> Rule {
        Rule::Rnn(rule)
    }
}

impl From<crate::jit::FusedRule> for Rule {
    fn from(rule: crate::jit::FusedRule) -> Rule {
        Rule::Fused(rule)
    }
}

impl From<conv::Rule> for Rule {
    fn from(rule: conv::Rule) -> Rule {
        Rule::Conv(rule)
    }
}

/// An operand's shape as a rule keeps it for `sum_to`: `None` when it is the output's
/// shape (no broadcasting), so that most nodes allocate nothing for it.
#[derive(Clone, Debug)]
pub(crate) struct InputShape(Option<Box<[usize]>>);

impl InputShape {
    /// The shape of `input` for a rule whose output is `output`.
    pub(crate) fn of(input: &Variable, output: &Variable) -> InputShape {
        let (i, o) = (input.shape(), output.shape());
        InputShape((i != o).then(|| i.as_slice().into()))
    }

    /// The shapes of two operands.
    pub(crate) fn pair(a: &Variable, b: &Variable, output: &Variable) -> (InputShape, InputShape) {
        (InputShape::of(a, output), InputShape::of(b, output))
    }
}

impl Variable {
    /// Sums a gradient of the output's shape down to an operand's (`sum_to_size`).
    pub(crate) fn sum_to(&self, shape: &InputShape) -> Result<Variable> {
        match &shape.0 {
            None => Ok(self.clone()),
            Some(s) => self.sum_to_size(s),
        }
    }
}

/// A shape kept by a rule that always needs it (one allocation, 16 bytes in the node).
pub(crate) type Shape = Box<[usize]>;

/// A variable's shape as a [`Shape`].
pub(crate) fn shape_of(v: &Variable) -> Shape {
    v.shape().as_slice().into()
}

/// What a unary op saves for backward.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Save {
    Nothing,
    Input,
    Output,
}

pub(crate) fn saved_at(saved: &[Option<Variable>], i: usize) -> Result<&Variable> {
    saved.get(i).and_then(|s| s.as_ref()).ok_or_else(|| {
        Error::NotImplemented(format!("rustgrad internal error: saved tensor {i} missing"))
    })
}

pub(crate) fn ints(dims: &[usize]) -> Vec<i64> {
    dims.iter().map(|&d| d as i64).collect()
}

/// Zero tensor of the gradient's dtype, as a 0-d variable (broadcasts anywhere).
pub(crate) fn zero_like(grad: &Variable) -> Variable {
    Variable::from_tensor(Tensor::scalar(0.0, grad.dtype()))
}

/// A zero gradient of `grad`'s shape, for inputs that do not reach the output. Not
/// `grad * 0`: that is NaN where the incoming gradient is infinite or NaN.
pub(crate) fn zeros_like(grad: &Variable) -> Result<Variable> {
    Ok(Variable::from_tensor(Tensor::zeros(
        &grad.shape(),
        grad.dtype(),
    )?))
}

#[cfg(test)]
mod tests {
    /// Every node of the arena holds a rule: a variant that needs a shape or a layout
    /// boxes it (or keeps it only when broadcasting made it differ from the output's),
    /// so a slot stays small (184 bytes when the rules held shapes inline).
    #[test]
    fn a_node_kind_stays_small() {
        assert!(std::mem::size_of::<super::Rule>() <= 40);
        assert!(std::mem::size_of::<super::OpRule>() <= 40);
        assert!(
            std::mem::size_of::<crate::autograd::graph::NodeKind<crate::variable::Variable>>()
                <= 40
        );
    }

    /// The node before hooks existed: `released` was its own field.
    #[allow(dead_code)]
    struct NodeWithoutExtras {
        kind: crate::autograd::graph::NodeKind<crate::variable::Variable>,
        next_edges: crate::autograd::graph::Edges<crate::variable::Variable>,
        saved: crate::variable::SavedSlots,
        released: bool,
        sequence_nr: u64,
        input_meta: crate::autograd::graph::InputMeta,
    }

    /// Hooks and metadata (`Node::extras`) did not make the arena slot bigger: the
    /// released flag moved into the sequence-number word (Note \[Hooks\]).
    #[test]
    fn extras_do_not_grow_the_node() {
        let with = std::mem::size_of::<crate::autograd::graph::Node<crate::variable::Variable>>();
        let without = std::mem::size_of::<NodeWithoutExtras>();
        assert!(with <= without, "{with} > {without}");
    }
}
