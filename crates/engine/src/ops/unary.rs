//! Elementwise ops of one tensor (and a scalar): neg, exp, log, sqrt, tanh, sigmoid,
//! relu, abs, sign, pow with a scalar exponent, clamp.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::{saved_at, zero_like, zeros_like, Grads, Save};
use crate::autograd::saved::SavedTensor;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::{CmpOp, Scalar, Tensor, UnaryOp};
use crate::variable::Variable;
use smallvec::smallvec;

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// `a ** exponent`; saved `[a]`.
    PowScalar { exponent: f64 },
    /// `-a`.
    Neg,
    /// `exp(a)`; saved `[out]`.
    Exp,
    /// `log(a)`; saved `[a]`.
    Log,
    /// `sqrt(a)`; saved `[out]`.
    Sqrt,
    /// `tanh(a)`; saved `[out]`.
    Tanh,
    /// `sigmoid(a)`; saved `[out]`.
    Sigmoid,
    /// `relu(a)`; saved `[out]`.
    Relu,
    /// `abs(a)`; saved `[a]`.
    Abs,
    /// `sign(a)`: zero gradient.
    Sign,
    /// `clamp(a, min, max)`; saved `[a]`.
    Clamp { min: Option<f64>, max: Option<f64> },
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::PowScalar { .. } => "PowBackward0",
            Rule::Neg => "NegBackward0",
            Rule::Exp => "ExpBackward0",
            Rule::Log => "LogBackward0",
            Rule::Sqrt => "SqrtBackward0",
            Rule::Tanh => "TanhBackward0",
            Rule::Sigmoid => "SigmoidBackward0",
            Rule::Relu => "ReluBackward0",
            Rule::Abs => "AbsBackward0",
            Rule::Sign => "SignBackward0",
            Rule::Clamp { .. } => "ClampBackward1",
        }
    }

    /// The gradients of the inputs given `grad`, the gradient of the output; `needs[i]`
    /// says whether input `i` wants one.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let _ = needs;
        let g = grad;
        Ok(match self {
            Rule::PowScalar { exponent } => {
                let x = saved_at(saved, 0)?;
                let ga = if *exponent == 0.0 {
                    zeros_like(g)
                } else {
                    g.mul(&x.pow_scalar(exponent - 1.0)?.mul_scalar(*exponent)?)?
                };
                smallvec![Some(ga)]
            }
            Rule::Neg => smallvec![Some(g.neg()?)],
            Rule::Exp => smallvec![Some(g.mul(saved_at(saved, 0)?)?)],
            Rule::Log => smallvec![Some(g.div(saved_at(saved, 0)?)?)],
            Rule::Sqrt => smallvec![Some(g.div(&saved_at(saved, 0)?.mul_scalar(2.0)?)?)],
            Rule::Tanh => {
                let y = saved_at(saved, 0)?;
                smallvec![Some(g.mul(&y.mul(y)?.rsub_scalar(1.0)?)?)]
            }
            Rule::Sigmoid => {
                let y = saved_at(saved, 0)?;
                smallvec![Some(g.mul(&y.mul(&y.rsub_scalar(1.0)?)?)?)]
            }
            Rule::Relu => {
                // PyTorch's threshold_backward: 0 where `y <= 0`, so a NaN output (from a
                // NaN input) passes the gradient through.
                let y = saved_at(saved, 0)?;
                let blocked = y
                    .tensor()
                    .compare(&Tensor::scalar(0.0, y.dtype()), CmpOp::Le)?;
                smallvec![Some(Variable::where_cond(&blocked, &zero_like(g), g)?)]
            }
            Rule::Abs => smallvec![Some(g.mul(&saved_at(saved, 0)?.sign()?)?)],
            Rule::Sign => smallvec![Some(zeros_like(g))],
            Rule::Clamp { min, max } => {
                // PyTorch 2.x with number bounds: the gradient passes strictly inside
                // (min < x < max); at a bound and outside it is 0, and so for NaN.
                let x = saved_at(saved, 0)?.tensor();
                let mut mask = Tensor::full(x.shape(), 1.0, DType::Bool);
                if let Some(lo) = min {
                    mask = mask.binary(
                        &x.compare(&Tensor::scalar(*lo, x.dtype()), CmpOp::Gt)?,
                        crate::tensor::BinaryOp::Mul,
                    )?;
                }
                if let Some(hi) = max {
                    mask = mask.binary(
                        &x.compare(&Tensor::scalar(*hi, x.dtype()), CmpOp::Lt)?,
                        crate::tensor::BinaryOp::Mul,
                    )?;
                }
                smallvec![Some(Variable::where_cond(&mask, g, &zero_like(g))?)]
            }
        })
    }
}

impl Variable {
    fn unary(&self, op: UnaryOp, kind: Rule, save: Save) -> Result<Variable> {
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
        self.unary(UnaryOp::Neg, Rule::Neg, Save::Nothing)
    }

    /// `e^self`.
    pub fn exp(&self) -> Result<Variable> {
        self.unary(UnaryOp::Exp, Rule::Exp, Save::Output)
    }

    /// Natural logarithm.
    pub fn log(&self) -> Result<Variable> {
        self.unary(UnaryOp::Log, Rule::Log, Save::Input)
    }

    /// Square root.
    pub fn sqrt(&self) -> Result<Variable> {
        self.unary(UnaryOp::Sqrt, Rule::Sqrt, Save::Output)
    }

    /// Hyperbolic tangent.
    pub fn tanh(&self) -> Result<Variable> {
        self.unary(UnaryOp::Tanh, Rule::Tanh, Save::Output)
    }

    /// Logistic sigmoid.
    pub fn sigmoid(&self) -> Result<Variable> {
        self.unary(UnaryOp::Sigmoid, Rule::Sigmoid, Save::Output)
    }

    /// `max(self, 0)`.
    pub fn relu(&self) -> Result<Variable> {
        self.unary(UnaryOp::Relu, Rule::Relu, Save::Output)
    }

    /// Absolute value.
    pub fn abs(&self) -> Result<Variable> {
        self.unary(UnaryOp::Abs, Rule::Abs, Save::Input)
    }

    /// Sign (-1, 0, 1); its gradient is zero.
    pub fn sign(&self) -> Result<Variable> {
        self.unary(UnaryOp::Sign, Rule::Sign, Save::Nothing)
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
                Rule::PowScalar { exponent },
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
                Rule::Clamp { min, max },
                smallvec![Some(SavedTensor::input(self))],
            )
        }))
    }
}
