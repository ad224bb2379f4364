//! Elementwise ops of two tensors with broadcasting: add, sub, mul, div, pow, rsub,
//! where, comparisons, and their scalar forms.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::{saved_at, zero_like, Grads, InputShape};
use crate::autograd::saved::SavedTensor;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::{BinaryOp, CmpOp, Scalar, Tensor};
use crate::variable::Variable;
use smallvec::smallvec;

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// `a + b`; no saved tensors.
    Add { a: InputShape, b: InputShape },
    /// `a - b`; no saved tensors.
    Sub { a: InputShape, b: InputShape },
    /// `b - a` (`scalar - tensor`, RsubBackward1); no saved tensors.
    Rsub { a: InputShape, b: InputShape },
    /// `a * b`; saved `[a if b needs grad, b if a needs grad]`.
    Mul { a: InputShape, b: InputShape },
    /// `a / b`; saved `[a, b]`.
    Div { a: InputShape, b: InputShape },
    /// `a ** b` (tensor exponent); saved `[a, b, out]`.
    Pow { a: InputShape, b: InputShape },
    /// `where(cond, a, b)`; saved `[cond]`.
    Where { a: InputShape, b: InputShape },
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Add { .. } => "AddBackward0",
            Rule::Sub { .. } => "SubBackward0",
            Rule::Rsub { .. } => "RsubBackward1",
            Rule::Mul { .. } => "MulBackward0",
            Rule::Div { .. } => "DivBackward0",
            Rule::Pow { .. } => "PowBackward1",
            Rule::Where { .. } => "WhereBackward0",
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
        let need = |i: usize| needs.get(i).copied().unwrap_or(false);
        let g = grad;
        Ok(match self {
            Rule::Add { a, b } => smallvec![
                if need(0) { Some(g.sum_to(a)?) } else { None },
                if need(1) { Some(g.sum_to(b)?) } else { None },
            ],
            Rule::Sub { a, b } | Rule::Rsub { a, b } => smallvec![
                if need(0) { Some(g.sum_to(a)?) } else { None },
                if need(1) {
                    Some(g.neg()?.sum_to(b)?)
                } else {
                    None
                },
            ],
            Rule::Mul { a, b } => smallvec![
                if need(0) {
                    Some(g.mul(saved_at(saved, 1)?)?.sum_to(a)?)
                } else {
                    None
                },
                if need(1) {
                    Some(g.mul(saved_at(saved, 0)?)?.sum_to(b)?)
                } else {
                    None
                },
            ],
            Rule::Div { a, b } => {
                let y = saved_at(saved, 1)?;
                smallvec![
                    if need(0) {
                        Some(g.div(y)?.sum_to(a)?)
                    } else {
                        None
                    },
                    if need(1) {
                        Some(
                            g.mul(saved_at(saved, 0)?)?
                                .div(&y.mul(y)?)?
                                .neg()?
                                .sum_to(b)?,
                        )
                    } else {
                        None
                    },
                ]
            }
            Rule::Pow { a, b } => {
                // `out` is saved only when the exponent needs a gradient.
                let (x, e) = (saved_at(saved, 0)?, saved_at(saved, 1)?);
                let ga = if need(0) {
                    // PyTorch's pow_backward_self: 0 where the exponent is 0 (not
                    // `g * 0 * 0^-1`, which is NaN at a zero base).
                    let one = Variable::from_tensor(Tensor::scalar(1.0, e.dtype()));
                    let term = g.mul(e)?.mul(&x.pow(&e.sub(&one)?)?)?;
                    let exponent_zero = e
                        .tensor()
                        .compare(&Tensor::scalar(0.0, e.dtype()), CmpOp::Eq)?;
                    Some(
                        Variable::where_cond(&exponent_zero, &zero_like(&term), &term)?
                            .sum_to(a)?,
                    )
                } else {
                    None
                };
                let gb = if need(1) {
                    // d/db a^b = a^b ln a, defined as 0 where a == 0 and b >= 0 (PyTorch).
                    let zero = Tensor::scalar(0.0, x.dtype());
                    let cond = x.tensor().compare(&zero, CmpOp::Eq)?.binary(
                        &e.tensor()
                            .compare(&Tensor::scalar(0.0, e.dtype()), CmpOp::Ge)?,
                        crate::tensor::BinaryOp::Mul,
                    )?;
                    let term = saved_at(saved, 2)?.mul(&x.log()?)?;
                    Some(
                        g.mul(&Variable::where_cond(&cond, &zero_like(&term), &term)?)?
                            .sum_to(b)?,
                    )
                } else {
                    None
                };
                smallvec![ga, gb]
            }
            Rule::Where { a, b } => {
                let cond = saved_at(saved, 0)?.tensor().clone();
                smallvec![
                    if need(0) {
                        Some(Variable::where_cond(&cond, g, &zero_like(g))?.sum_to(a)?)
                    } else {
                        None
                    },
                    if need(1) {
                        Some(Variable::where_cond(&cond, &zero_like(g), g)?.sum_to(b)?)
                    } else {
                        None
                    },
                ]
            }
        })
    }
}

impl Variable {
    fn binary(&self, other: &Variable, op: BinaryOp) -> Result<Variable> {
        let result = self.tensor().binary(&other.tensor(), op)?;
        Ok(Variable::record(result, &[self, other], |needs, out| {
            let (a, b) = InputShape::pair(self, other, out);
            let save_if = |cond: bool, v: &Variable| cond.then(|| SavedTensor::input(v));
            match op {
                BinaryOp::Add => (Rule::Add { a, b }, smallvec![]),
                BinaryOp::Sub => (Rule::Sub { a, b }, smallvec![]),
                BinaryOp::Mul => (
                    Rule::Mul { a, b },
                    smallvec![save_if(needs[1], self), save_if(needs[0], other)],
                ),
                BinaryOp::Div => (
                    Rule::Div { a, b },
                    smallvec![save_if(needs[1], self), Some(SavedTensor::input(other))],
                ),
                BinaryOp::Pow => (
                    Rule::Pow { a, b },
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
        Ok(Variable::record(result, &[other, self], |_, out| {
            let (a, b) = InputShape::pair(other, self, out);
            (Rule::Rsub { a, b }, smallvec![])
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
        Ok(Variable::record(result, &[a, b], |_, out| {
            let (sa, sb) = InputShape::pair(a, b, out);
            (
                Rule::Where { a: sa, b: sb },
                smallvec![Some(SavedTensor::input(&Variable::from_tensor(
                    cond.clone()
                )))],
            )
        }))
    }
}
