//! The ops a capture records: each variant holds the op's attributes, and
//! [`Op::apply`] runs the same `Variable` method the eager call ran, so a replay
//! computes bitwise what the eager step computed. See Note [Capture and replay].

use std::sync::{Arc, Mutex};

use crate::autograd::grad_mode;
use crate::error::{Error, Result};
use crate::kernels::math::{MathBinaryOp, MathOp};
use crate::ops::loss::{PointwiseLoss, Reduction};
use crate::ops::unary::Rule as UnaryRule;
use crate::ops::Save;
use crate::optim::{Options, ParamState};
use crate::tensor::{BinaryOp, Scalar, UnaryOp};
use crate::variable::Variable;
use crate::ConvPadding;
use crate::DropoutKind;

/// Convolution padding, owned.
#[derive(Clone, Debug)]
pub(crate) enum Padding {
    Explicit(Box<[i64]>),
    Same,
    Valid,
}

impl Padding {
    pub(crate) fn of(p: &ConvPadding<'_>) -> Padding {
        match p {
            ConvPadding::Explicit(v) => Padding::Explicit((*v).into()),
            ConvPadding::Same => Padding::Same,
            ConvPadding::Valid => Padding::Valid,
        }
    }

    fn as_conv(&self) -> ConvPadding<'_> {
        match self {
            Padding::Explicit(v) => ConvPadding::Explicit(v),
            Padding::Same => ConvPadding::Same,
            Padding::Valid => ConvPadding::Valid,
        }
    }
}

/// A recorded op. Optional tensor operands are flagged (`has_bias`, ...) and, when
/// present, follow the required ones in the node's inputs.
#[derive(Debug)]
pub(crate) enum Op {
    /// `a op b` with broadcasting (`add`, `sub`, `mul`, `div`, `pow`).
    Binary(BinaryOp),
    /// `other - self` (`rsub`: `number - tensor`), inputs `[self, other]`.
    Rsub,
    /// A [`MathBinaryOp`] of two tensors.
    MathBinary(MathBinaryOp),
    /// A unary op of `unary.rs` with its rule and what it saves.
    Unary(UnaryOp, UnaryRule, Save),
    /// A [`MathOp`] elementwise.
    Math(MathOp),
    Sum,
    SumDims(Shape64, bool),
    Mean,
    MeanDims(Shape64, bool),
    Softmax(i64),
    LogSoftmax(i64),
    Matmul,
    Linear {
        has_bias: bool,
    },
    Addmm(Scalar, Scalar),
    Conv2d {
        has_bias: bool,
        stride: Shape64,
        padding: Padding,
        dilation: Shape64,
        groups: i64,
    },
    /// `batch_norm(x, running_mean, running_var, weight, bias, ...)`; `present` flags
    /// the four optional operands.
    BatchNorm {
        present: [bool; 4],
        training: bool,
        momentum: f64,
        eps: f64,
    },
    MaxPool2d(crate::Pool2d),
    AdaptiveMaxPool2d([i64; 2]),
    AvgPool2d(crate::Pool2d, bool, Option<i64>),
    AdaptiveAvgPool2d([i64; 2]),
    LayerNorm {
        shape: Shape64,
        has_weight: bool,
        has_bias: bool,
        eps: f64,
    },
    View(Shape64),
    Reshape(Shape64),
    Transpose(i64, i64),
    Permute(Shape64),
    T,
    Unsqueeze(i64),
    CrossEntropy {
        has_weight: bool,
        reduction: Reduction,
        ignore_index: i64,
        label_smoothing: f64,
    },
    PointwiseLoss {
        kind: PointwiseLoss,
        has_weight: bool,
        has_pos_weight: bool,
        reduction: Reduction,
    },
    /// Dropout on the default generator (its stream advances as in the eager step).
    Dropout {
        p: f64,
        training: bool,
        kind: DropoutKind,
        inplace: bool,
    },
    /// `self op= other` (`add_`, `sub_`, `mul_`, `div_`).
    InPlaceBinary(BinaryOp),
    ZeroInPlace,
    CopyInPlace,
    ReluInPlace,
    /// `root.backward(gradient)`, `has_gradient` flags the optional gradient operand.
    Backward {
        has_gradient: bool,
        retain_graph: bool,
        create_graph: bool,
    },
    /// `x.grad = value` (`has_value`) or `x.grad = None`.
    SetGrad {
        has_value: bool,
    },
    /// Reads `x.grad` (an output; `None` is an error at replay).
    Grad,
    /// Grad mode switched on or off (`no_grad`, `enable_grad`).
    SetGradEnabled(bool),
    /// One optimizer step of a param group over the node's inputs, with the state
    /// created by the captured step (updated in place by each replay).
    OptimStep {
        options: Options,
        states: Mutex<Vec<ParamState>>,
    },
    /// A chain of elementwise ops evaluated as one node (Note [Capture and replay]).
    Fused(Arc<super::fused::Program>),
}

/// Integer lists of an op's attributes.
pub(crate) type Shape64 = Box<[i64]>;

fn opt(present: bool, inputs: &[Variable], next: &mut usize) -> Option<Variable> {
    if present {
        *next += 1;
        inputs.get(*next - 1).cloned()
    } else {
        None
    }
}

fn one(v: Variable) -> Result<Vec<Variable>> {
    Ok(vec![v])
}

impl Op {
    /// The op's name, for error messages and `Graph::op_names`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Op::Binary(BinaryOp::Add) => "add",
            Op::Binary(BinaryOp::Sub) => "sub",
            Op::Binary(BinaryOp::Mul) => "mul",
            Op::Binary(BinaryOp::Div) => "div",
            Op::Binary(BinaryOp::Pow) => "pow",
            Op::Rsub => "rsub",
            Op::MathBinary(_) => "math_binary",
            Op::Unary(op, ..) => match op {
                UnaryOp::Neg => "neg",
                UnaryOp::Abs => "abs",
                UnaryOp::Sign => "sign",
                UnaryOp::Relu => "relu",
                UnaryOp::Exp => "exp",
                UnaryOp::Log => "log",
                UnaryOp::Sqrt => "sqrt",
                UnaryOp::Tanh => "tanh",
                UnaryOp::Sigmoid => "sigmoid",
            },
            Op::Math(_) => "math",
            Op::Sum | Op::SumDims(..) => "sum",
            Op::Mean | Op::MeanDims(..) => "mean",
            Op::Softmax(_) => "softmax",
            Op::LogSoftmax(_) => "log_softmax",
            Op::Matmul => "matmul",
            Op::Linear { .. } => "linear",
            Op::Addmm(..) => "addmm",
            Op::Conv2d { .. } => "conv2d",
            Op::BatchNorm { .. } => "batch_norm",
            Op::MaxPool2d(_) => "max_pool2d",
            Op::AdaptiveMaxPool2d(_) => "adaptive_max_pool2d",
            Op::AvgPool2d(..) => "avg_pool2d",
            Op::AdaptiveAvgPool2d(_) => "adaptive_avg_pool2d",
            Op::LayerNorm { .. } => "layer_norm",
            Op::View(_) => "view",
            Op::Reshape(_) => "reshape",
            Op::Transpose(..) => "transpose",
            Op::Permute(_) => "permute",
            Op::T => "t",
            Op::Unsqueeze(_) => "unsqueeze",
            Op::CrossEntropy { .. } => "cross_entropy",
            Op::PointwiseLoss { .. } => "pointwise_loss",
            Op::Dropout { .. } => "dropout",
            Op::InPlaceBinary(_) => "binary_",
            Op::ZeroInPlace => "zero_",
            Op::CopyInPlace => "copy_",
            Op::ReluInPlace => "relu_",
            Op::Backward { .. } => "backward",
            Op::SetGrad { .. } => "set_grad",
            Op::Grad => "grad",
            Op::SetGradEnabled(_) => "set_grad_enabled",
            Op::OptimStep { .. } => "optim_step",
            Op::Fused(_) => "fused_elementwise",
        }
    }

    /// Whether the op only computes its outputs from its inputs (no writes, no
    /// randomness), so a replay may drop it when nothing reads its outputs.
    pub(crate) fn is_pure(&self) -> bool {
        !matches!(
            self,
            Op::BatchNorm { .. }
                | Op::Dropout { .. }
                | Op::InPlaceBinary(_)
                | Op::ZeroInPlace
                | Op::CopyInPlace
                | Op::ReluInPlace
                | Op::Backward { .. }
                | Op::SetGrad { .. }
                | Op::SetGradEnabled(_)
                | Op::OptimStep { .. }
        )
    }

    /// Runs the op on `inputs` (in the recorded order) as the eager call did.
    pub(crate) fn apply(&self, inputs: &[Variable]) -> Result<Vec<Variable>> {
        let arg = |i: usize| -> Result<&Variable> {
            inputs.get(i).ok_or_else(|| {
                Error::InvalidArgument(format!("replay: {} is missing operand {i}", self.name()))
            })
        };
        match self {
            Op::Binary(op) => one(arg(0)?.binary(arg(1)?, *op)?),
            Op::Rsub => one(arg(0)?.rsub(arg(1)?)?),
            Op::MathBinary(op) => one(arg(0)?.math_binary(arg(1)?, *op)?),
            Op::Unary(op, rule, save) => one(arg(0)?.unary(*op, rule.clone(), *save)?),
            Op::Math(op) => one(arg(0)?.math(*op)?),
            Op::Sum => one(arg(0)?.sum()?),
            Op::SumDims(d, k) => one(arg(0)?.sum_dims(d, *k)?),
            Op::Mean => one(arg(0)?.mean()?),
            Op::MeanDims(d, k) => one(arg(0)?.mean_dims(d, *k)?),
            Op::Softmax(d) => one(arg(0)?.softmax(*d)?),
            Op::LogSoftmax(d) => one(arg(0)?.log_softmax(*d)?),
            Op::Matmul => one(arg(0)?.matmul(arg(1)?)?),
            Op::Linear { has_bias } => {
                let mut next = 2;
                let b = opt(*has_bias, inputs, &mut next);
                one(arg(0)?.linear(arg(1)?, b.as_ref())?)
            }
            Op::Addmm(beta, alpha) => one(arg(0)?.addmm(arg(1)?, arg(2)?, *beta, *alpha)?),
            Op::Conv2d {
                has_bias,
                stride,
                padding,
                dilation,
                groups,
            } => {
                let mut next = 2;
                let b = opt(*has_bias, inputs, &mut next);
                one(arg(0)?.conv2d(
                    arg(1)?,
                    b.as_ref(),
                    stride,
                    padding.as_conv(),
                    dilation,
                    *groups,
                )?)
            }
            Op::BatchNorm {
                present,
                training,
                momentum,
                eps,
            } => {
                let mut next = 1;
                let rm = opt(present[0], inputs, &mut next);
                let rv = opt(present[1], inputs, &mut next);
                let w = opt(present[2], inputs, &mut next);
                let b = opt(present[3], inputs, &mut next);
                one(arg(0)?.batch_norm(
                    rm.as_ref(),
                    rv.as_ref(),
                    w.as_ref(),
                    b.as_ref(),
                    *training,
                    *momentum,
                    *eps,
                )?)
            }
            Op::MaxPool2d(p) => {
                let (out, indices) = arg(0)?.max_pool2d_with_indices(p)?;
                Ok(vec![out, indices])
            }
            Op::AdaptiveMaxPool2d(size) => {
                let (out, indices) = arg(0)?.adaptive_max_pool2d(size)?;
                Ok(vec![out, indices])
            }
            Op::AvgPool2d(p, count_include_pad, divisor) => {
                one(arg(0)?.avg_pool2d(p, *count_include_pad, *divisor)?)
            }
            Op::AdaptiveAvgPool2d(size) => one(arg(0)?.adaptive_avg_pool2d(size)?),
            Op::LayerNorm {
                shape,
                has_weight,
                has_bias,
                eps,
            } => {
                let mut next = 1;
                let w = opt(*has_weight, inputs, &mut next);
                let b = opt(*has_bias, inputs, &mut next);
                one(arg(0)?.layer_norm(shape, w.as_ref(), b.as_ref(), *eps)?)
            }
            Op::View(s) => one(arg(0)?.view(s)?),
            Op::Reshape(s) => one(arg(0)?.reshape(s)?),
            Op::Transpose(a, b) => one(arg(0)?.transpose(*a, *b)?),
            Op::Permute(d) => one(arg(0)?.permute(d)?),
            Op::T => one(arg(0)?.t()?),
            Op::Unsqueeze(d) => one(arg(0)?.unsqueeze(*d)?),
            Op::CrossEntropy {
                has_weight,
                reduction,
                ignore_index,
                label_smoothing,
            } => {
                let mut next = 2;
                let w = opt(*has_weight, inputs, &mut next);
                one(arg(0)?.cross_entropy(
                    arg(1)?,
                    w.as_ref(),
                    *reduction,
                    *ignore_index,
                    *label_smoothing,
                )?)
            }
            Op::PointwiseLoss {
                kind,
                has_weight,
                has_pos_weight,
                reduction,
            } => {
                let mut next = 2;
                let w = opt(*has_weight, inputs, &mut next);
                let p = opt(*has_pos_weight, inputs, &mut next);
                one(arg(0)?.pointwise_loss(arg(1)?, *kind, w.as_ref(), p.as_ref(), *reduction)?)
            }
            Op::Dropout {
                p,
                training,
                kind,
                inplace,
            } => {
                let generator = crate::random::default_generator();
                one(arg(0)?.dropout(*p, *training, *kind, *inplace, &generator)?)
            }
            Op::InPlaceBinary(op) => {
                let (a, b) = (arg(0)?, arg(1)?);
                match op {
                    BinaryOp::Add => a.add_(b)?,
                    BinaryOp::Sub => a.sub_(b)?,
                    BinaryOp::Mul => a.mul_(b)?,
                    BinaryOp::Div => a.div_(b)?,
                    BinaryOp::Pow => {
                        return Err(Error::NotImplemented("replay: pow_".into()));
                    }
                }
                Ok(Vec::new())
            }
            Op::ZeroInPlace => {
                arg(0)?.zero_()?;
                Ok(Vec::new())
            }
            Op::CopyInPlace => {
                arg(0)?.copy_(arg(1)?)?;
                Ok(Vec::new())
            }
            Op::ReluInPlace => {
                arg(0)?.relu_()?;
                Ok(Vec::new())
            }
            Op::Backward {
                has_gradient,
                retain_graph,
                create_graph,
            } => {
                let mut next = 1;
                let g = opt(*has_gradient, inputs, &mut next);
                arg(0)?.backward_with(g.as_ref(), *retain_graph, *create_graph)?;
                Ok(Vec::new())
            }
            Op::SetGrad { has_value } => {
                let value = if *has_value {
                    Some(arg(1)?.clone())
                } else {
                    None
                };
                arg(0)?.set_grad(value)?;
                Ok(Vec::new())
            }
            Op::Grad => match arg(0)?.grad() {
                Some(g) => one(g),
                None => Err(Error::InvalidArgument(
                    "replay: a captured `.grad` read found no gradient (the replay took \
                     another path than the capture)"
                        .into(),
                )),
            },
            Op::SetGradEnabled(on) => {
                grad_mode::set_grad_enabled(*on);
                Ok(Vec::new())
            }
            Op::OptimStep { options, states } => {
                let mut states = states.lock().unwrap_or_else(|e| e.into_inner());
                crate::optim::step_group(options, inputs, &mut states)?;
                Ok(Vec::new())
            }
            Op::Fused(program) => one(super::fused::run(program, inputs)?),
        }
    }
}
