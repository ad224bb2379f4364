//! Elementwise ops of two tensors with broadcasting: add, sub, mul, div, pow, rsub,
//! where, comparisons, the functions of [`MathBinaryOp`] (atan2, maximum, minimum,
//! fmax, fmin, fmod, remainder, copysign), and their scalar forms.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::{saved_at, zero_like, zeros_like, Grads, InputShape};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::kernels::math::{MathBinaryOp, MathFloat, MathOp};
use crate::shape;
use crate::storage::WriteSite;
use crate::tensor::{check_allocation, BinaryOp, CmpOp, Scalar, Tensor};
use crate::variable::SavedTensor;
use crate::variable::Variable;
use smallvec::smallvec;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering};

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
    /// `atan2(a, b)`; saved `[a, b]`.
    Atan2 { a: InputShape, b: InputShape },
    /// `maximum(a, b)`; saved `[a, b]`.
    Maximum { a: InputShape, b: InputShape },
    /// `minimum(a, b)`; saved `[a, b]`.
    Minimum { a: InputShape, b: InputShape },
    /// `fmax(a, b)`; saved `[a, b]`.
    Fmax { a: InputShape, b: InputShape },
    /// `fmin(a, b)`; saved `[a, b]`.
    Fmin { a: InputShape, b: InputShape },
    /// `fmod(a, b)` of two tensors; saved `[a, b]` when `b` needs a gradient.
    Fmod { a: InputShape, b: InputShape },
    /// `remainder(a, b)` of two tensors; saved `[a, b]` when `b` needs a gradient.
    Remainder { a: InputShape, b: InputShape },
    /// `copysign(a, b)` of two tensors; saved `[a, out]`.
    Copysign { a: InputShape, b: InputShape },
    /// `hypot(a, b)`; saved `[a, b, out]`.
    Hypot { a: InputShape, b: InputShape },
    /// `logaddexp(a, b)`; saved `[a, b]`.
    Logaddexp { a: InputShape, b: InputShape },
    /// `logaddexp2(a, b)`; saved `[a, b]`.
    Logaddexp2 { a: InputShape, b: InputShape },
    /// `div(a, b, rounding_mode=...)` (DivBackward2): zero gradients.
    DivRounding { a: InputShape, b: InputShape },
    /// An op PyTorch records without a derivative (its node is "NotImplemented"):
    /// backward fails with the message held (`floor_divide`, `bernoulli(input, p)`).
    NotImplemented(&'static str),
    /// `fmod(a, number)`, `remainder(a, number)` (FmodBackward0, RemainderBackward0):
    /// the gradient passes unchanged.
    FmodScalar { remainder: bool },
    /// `copysign(a, number)` (CopysignBackward1); saved `[a, out]`.
    CopysignScalar,
    /// `number ** a` (PowBackward2); saved `[a, out]`.
    PowScalarBase { base: f64 },
    /// `xlogy(a, b)` of two tensors; saved `[a, b]`.
    Xlogy { a: InputShape, b: InputShape },
    /// `special.xlog1py(a, b)` of two tensors; saved `[a, b]`.
    Xlog1py { a: InputShape, b: InputShape },
    /// `xlogy(a, number)` / `xlog1py(a, number)` (XlogyBackward2,
    /// SpecialXlog1PyBackward2); saved `[a]`.
    XlogyScalarOther { other: f64, log1p: bool },
    /// `xlogy(number, b)` / `xlog1py(number, b)` (XlogyBackward1,
    /// SpecialXlog1PyBackward1); saved `[b]`.
    XlogyScalarSelf { value: f64, log1p: bool },
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
            Rule::Atan2 { .. } => "Atan2Backward0",
            Rule::Maximum { .. } => "MaximumBackward0",
            Rule::Minimum { .. } => "MinimumBackward0",
            Rule::Fmax { .. } => "FmaxBackward0",
            Rule::Fmin { .. } => "FminBackward0",
            Rule::Fmod { .. } => "FmodBackward1",
            Rule::Remainder { .. } => "RemainderBackward1",
            Rule::Copysign { .. } => "CopysignBackward0",
            Rule::Hypot { .. } => "HypotBackward0",
            Rule::Logaddexp { .. } => "LogaddexpBackward0",
            Rule::Logaddexp2 { .. } => "Logaddexp2Backward0",
            Rule::DivRounding { .. } => "DivBackward2",
            Rule::NotImplemented(_) => "NotImplemented",
            Rule::FmodScalar { remainder: false } => "FmodBackward0",
            Rule::FmodScalar { remainder: true } => "RemainderBackward0",
            Rule::CopysignScalar => "CopysignBackward1",
            Rule::PowScalarBase { .. } => "PowBackward2",
            Rule::Xlogy { .. } => "XlogyBackward0",
            Rule::Xlog1py { .. } => "SpecialXlog1PyBackward0",
            Rule::XlogyScalarSelf { log1p: false, .. } => "XlogyBackward1",
            Rule::XlogyScalarSelf { log1p: true, .. } => "SpecialXlog1PyBackward1",
            Rule::XlogyScalarOther { log1p: false, .. } => "XlogyBackward2",
            Rule::XlogyScalarOther { log1p: true, .. } => "SpecialXlog1PyBackward2",
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
            Rule::Atan2 { a, b } => {
                let (x, y) = (saved_at(saved, 0)?, saved_at(saved, 1)?);
                let recip = x.mul(x)?.add(&y.mul(y)?)?.reciprocal()?;
                smallvec![
                    if need(0) {
                        Some(g.mul(&y.mul(&recip)?)?.sum_to(a)?)
                    } else {
                        None
                    },
                    if need(1) {
                        Some(g.mul(&x.neg()?.mul(&recip)?)?.sum_to(b)?)
                    } else {
                        None
                    },
                ]
            }
            Rule::Maximum { a, b } | Rule::Minimum { a, b } => {
                // PyTorch: a tie splits the gradient in half; the smaller (for maximum)
                // operand gets 0. NaN compares false both ways, so both get it whole.
                let (x, y) = (saved_at(saved, 0)?.tensor(), saved_at(saved, 1)?.tensor());
                let tie = x.compare(&y, CmpOp::Eq)?;
                let shared = Variable::where_cond(&tie, &g.div_scalar(2.0)?, g)?;
                let (lose_a, lose_b) = match self {
                    Rule::Maximum { .. } => (CmpOp::Lt, CmpOp::Gt),
                    _ => (CmpOp::Gt, CmpOp::Lt),
                };
                let part = |lose: CmpOp, shape: &InputShape| -> Result<Variable> {
                    let mask = x.compare(&y, lose)?;
                    Variable::where_cond(&mask, &zero_like(g), &shared)?.sum_to(shape)
                };
                smallvec![
                    if need(0) {
                        Some(part(lose_a, a)?)
                    } else {
                        None
                    },
                    if need(1) {
                        Some(part(lose_b, b)?)
                    } else {
                        None
                    },
                ]
            }
            Rule::Fmax { a, b } | Rule::Fmin { a, b } => {
                // PyTorch: a tie splits the gradient in half; otherwise `a` gets it where
                // `a > b` (fmin: `<`) or `b` is NaN, and `b` elsewhere.
                let (x, y) = (saved_at(saved, 0)?.tensor(), saved_at(saved, 1)?.tensor());
                let cmp = if matches!(self, Rule::Fmax { .. }) {
                    CmpOp::Gt
                } else {
                    CmpOp::Lt
                };
                let tie = x.compare(&y, CmpOp::Eq)?;
                let half = g.div_scalar(2.0)?;
                let to_a = x
                    .compare(&y, cmp)?
                    .binary(&y.compare(&y, CmpOp::Ne)?, BinaryOp::Add)?;
                let part = |mine: &Variable, theirs: &Variable, shape: &InputShape| {
                    let v = Variable::where_cond(&to_a, mine, theirs)?;
                    Variable::where_cond(&tie, &half, &v)?.sum_to(shape)
                };
                smallvec![
                    if need(0) {
                        Some(part(g, &zero_like(g), a)?)
                    } else {
                        None
                    },
                    if need(1) {
                        Some(part(&zero_like(g), g, b)?)
                    } else {
                        None
                    },
                ]
            }
            Rule::Fmod { a, b } | Rule::Remainder { a, b } => {
                // d/db = -(a / b rounded toward zero, or down for remainder): a quotient
                // that is piecewise constant, so it enters as a constant.
                let gb = if need(1) {
                    let (x, y) = (saved_at(saved, 0)?.tensor(), saved_at(saved, 1)?.tensor());
                    let rounding = if matches!(self, Rule::Fmod { .. }) {
                        MathOp::Trunc
                    } else {
                        MathOp::Floor
                    };
                    let quotient = x.binary(&y, BinaryOp::Div)?.math(rounding)?;
                    Some(g.mul(&Variable::from_tensor(quotient))?.neg()?.sum_to(b)?)
                } else {
                    None
                };
                smallvec![if need(0) { Some(g.sum_to(a)?) } else { None }, gb]
            }
            Rule::Copysign { a, b } => smallvec![
                if need(0) {
                    Some(g.mul(&copysign_ratio(saved)?)?.sum_to(a)?)
                } else {
                    None
                },
                if need(1) {
                    Some(zeros_like(g)?.sum_to(b)?)
                } else {
                    None
                },
            ],
            Rule::Hypot { a, b } => {
                // d/da = a / out, d/db = b / out.
                let (x, y, out) = (
                    saved_at(saved, 0)?,
                    saved_at(saved, 1)?,
                    saved_at(saved, 2)?,
                );
                smallvec![
                    if need(0) {
                        Some(g.mul(x)?.div(out)?.sum_to(a)?)
                    } else {
                        None
                    },
                    if need(1) {
                        Some(g.mul(y)?.div(out)?.sum_to(b)?)
                    } else {
                        None
                    },
                ]
            }
            Rule::Logaddexp { a, b } | Rule::Logaddexp2 { a, b } => {
                // d/da = 1 / (1 + e^(b - a)) (base 2 for logaddexp2), and symmetrically.
                let (x, y) = (saved_at(saved, 0)?, saved_at(saved, 1)?);
                let two = matches!(self, Rule::Logaddexp2 { .. });
                let part = |p: &Variable, q: &Variable, shape: &InputShape| -> Result<Variable> {
                    let d = q.sub(p)?;
                    let e = if two { d.exp2()? } else { d.exp()? };
                    g.div(&e.add_scalar(1.0)?)?.sum_to(shape)
                };
                smallvec![
                    if need(0) { Some(part(x, y, a)?) } else { None },
                    if need(1) { Some(part(y, x, b)?) } else { None },
                ]
            }
            Rule::DivRounding { a, b } => smallvec![
                if need(0) {
                    Some(zeros_like(g)?.sum_to(a)?)
                } else {
                    None
                },
                if need(1) {
                    Some(zeros_like(g)?.sum_to(b)?)
                } else {
                    None
                },
            ],
            Rule::NotImplemented(message) => return Err(Error::NotImplemented((*message).into())),
            Rule::FmodScalar { .. } => smallvec![Some(g.clone())],
            Rule::CopysignScalar => smallvec![Some(g.mul(&copysign_ratio(saved)?)?)],
            Rule::PowScalarBase { base } => {
                // d/da base^a = base^a ln(base); PyTorch defines it as 0 where base == 0
                // and a >= 0 (not 0 * -inf).
                let (e, out) = (saved_at(saved, 0)?, saved_at(saved, 1)?);
                let term = g.mul(&out.mul_scalar(base.ln())?)?;
                let grad = if *base == 0.0 {
                    let cond = e
                        .tensor()
                        .compare(&Tensor::scalar(0.0, e.dtype()), CmpOp::Ge)?;
                    Variable::where_cond(&cond, &zero_like(&term), &term)?
                } else {
                    term
                };
                smallvec![Some(grad)]
            }
            Rule::Xlogy { a, b } | Rule::Xlog1py { a, b } => {
                // PyTorch's derivatives.yaml: d/da = xlogy(grad, b), 0 where a == 0 and
                // b <= 0 (b <= -1 for xlog1py); d/db = grad * a / b (/ (b + 1)).
                let log1p = matches!(self, Rule::Xlog1py { .. });
                let (x, y) = (saved_at(saved, 0)?, saved_at(saved, 1)?);
                smallvec![
                    if need(0) {
                        Some(xlogy_self_grad(g, x, y, log1p)?.sum_to(a)?)
                    } else {
                        None
                    },
                    if need(1) {
                        let y = if log1p { y.add_scalar(1.0)? } else { y.clone() };
                        Some(g.mul(x)?.div(&y)?.sum_to(b)?)
                    } else {
                        None
                    },
                ]
            }
            Rule::XlogyScalarOther { other, log1p } => {
                let x = saved_at(saved, 0)?;
                let op = xlogy_op(*log1p);
                let term = g.math_binary(&g.wrap_scalar(Scalar::Float(*other)), op)?;
                // The mask only matters where log(other) is not finite-and-defined.
                let threshold = if *log1p { -1.0 } else { 0.0 };
                if *other > threshold {
                    smallvec![Some(term)]
                } else {
                    let at_zero = x
                        .tensor()
                        .compare(&Tensor::scalar(0.0, x.dtype()), CmpOp::Eq)?;
                    smallvec![Some(Variable::where_cond(
                        &at_zero,
                        &zero_like(&term),
                        &term
                    )?)]
                }
            }
            Rule::XlogyScalarSelf { value, log1p } => {
                let y = saved_at(saved, 0)?;
                let y = if *log1p {
                    y.add_scalar(1.0)?
                } else {
                    y.clone()
                };
                smallvec![Some(g.mul_scalar(*value)?.div(&y)?)]
            }
        })
    }
}

/// The kernel of `xlogy` (`log1p` false) or `special.xlog1py`.
fn xlogy_op(log1p: bool) -> MathBinaryOp {
    if log1p {
        MathBinaryOp::Xlog1py
    } else {
        MathBinaryOp::Xlogy
    }
}

/// `xlogy(grad, y)` with 0 where `x == 0` and `y <= 0` (`y <= -1` for `xlog1py`):
/// PyTorch's gradient of `xlogy(x, y)` in `x` (Note [Gradient formula for xlogy at x = 0,
/// y <= 0] in derivatives.yaml). Written with `xlogy` itself, so double backward works.
fn xlogy_self_grad(g: &Variable, x: &Variable, y: &Variable, log1p: bool) -> Result<Variable> {
    let term = g.math_binary(y, xlogy_op(log1p))?;
    let threshold = if log1p { -1.0 } else { 0.0 };
    let mask = x
        .tensor()
        .compare(&Tensor::scalar(0.0, x.dtype()), CmpOp::Eq)?
        .binary(
            &y.tensor()
                .compare(&Tensor::scalar(threshold, y.dtype()), CmpOp::Le)?,
            BinaryOp::Mul,
        )?;
    Variable::where_cond(&mask, &zero_like(&term), &term)
}

/// `out / a`, 0 where `a == 0`: copysign's derivative in `a` (PyTorch's
/// `copysign_tensor_self_backward`). It is piecewise constant (+-1), so it enters as a
/// constant.
fn copysign_ratio(saved: &[Option<Variable>]) -> Result<Variable> {
    let (x, out) = (saved_at(saved, 0)?.tensor(), saved_at(saved, 1)?.tensor());
    let ratio = out.binary(&x, BinaryOp::Div)?;
    let zero = Tensor::scalar(0.0, ratio.dtype());
    let at_zero = x.compare(&Tensor::scalar(0.0, x.dtype()), CmpOp::Eq)?;
    Ok(Variable::from_tensor(Tensor::where_cond(
        &at_zero, &zero, &ratio,
    )?))
}

impl Tensor {
    /// A [`MathBinaryOp`] with broadcasting and PyTorch's type promotion (atan2 and
    /// copysign compute integers in the default float dtype; maximum, minimum, fmax
    /// and fmin accept bool; fmod and remainder refuse bool, and an int64 zero divisor
    /// is PyTorch's "ZeroDivisionError").
    pub fn math_binary(&self, other: &Tensor, op: MathBinaryOp) -> Result<Tensor> {
        let out_shape = shape::broadcast_shapes(self.shape(), other.shape())?;
        let promoted = Tensor::result_type(self, other);
        let dtype = if op.promotes_integers() && !promoted.is_floating_point() {
            DType::default_float()
        } else {
            promoted
        };
        check_allocation(shape::checked_numel(&out_shape)?, dtype)?;
        let compute = match (dtype, op) {
            (d, op) if op.floats_only() && !d.is_floating_point() => {
                return Err(Error::unsupported_dtype(op.name(), dtype))
            }
            (
                DType::Bool,
                MathBinaryOp::Fmod
                | MathBinaryOp::Remainder
                | MathBinaryOp::DivTrunc
                | MathBinaryOp::DivFloor,
            ) => return Err(Error::unsupported_dtype(op.name(), DType::Bool)),
            // max / min of bools compute as 0 / 1 and convert back; every integer
            // dtype computes on its int64 values (floor division, remainder and
            // max / min of those truncate back to the same values PyTorch's narrow
            // kernels give); the 16-bit floats compute in float32 (Note [Storage dtypes]).
            (DType::Bool, _) => DType::I64,
            (d, _) if d.is_integer() => DType::I64,
            (d, _) => d.compute_dtype(),
        };
        // Operands go to the result dtype first, then to the compute dtype (Note
        // [Wrapped scalars]): `maximum(uint8, tensor(300))` compares with 44. A 0-d
        // divisor of a rounding division on 16-bit floats keeps its value, as PyTorch's
        // `original_scalar_value` does.
        let exact = dtype.is_half()
            && other.dim() == 0
            && matches!(op, MathBinaryOp::DivTrunc | MathBinaryOp::DivFloor);
        let (a, b) = (
            self.cast_operand(dtype, compute, false)?,
            other.cast_operand(dtype, compute, exact)?,
        );
        let la = a.layout().broadcast_to(&out_shape)?;
        let lb = b.layout().broadcast_to(&out_shape)?;
        fn floats<T: MathFloat>(
            a: &Tensor,
            b: &Tensor,
            (la, lb): (&crate::layout::Layout, &crate::layout::Layout),
            op: MathBinaryOp,
        ) -> Result<Vec<T>> {
            a.read2(b, |sa: &[T], sb: &[T]| {
                elementwise::map2(sa, la, sb, lb, |x, y| op.apply(x, y))
            })
        }
        let buffer = match compute {
            DType::F32 => <f32 as Element>::into_buffer(floats::<f32>(&a, &b, (&la, &lb), op)?),
            DType::F64 => <f64 as Element>::into_buffer(floats::<f64>(&a, &b, (&la, &lb), op)?),
            _ => {
                let zero_divisor = AtomicBool::new(false);
                let v = a.read2(&b, |sa: &[i64], sb: &[i64]| {
                    elementwise::map2(sa, &la, sb, &lb, |x, y| {
                        op.apply_i64(x, y).unwrap_or_else(|| {
                            zero_divisor.store(true, Ordering::Relaxed);
                            0
                        })
                    })
                })?;
                if zero_divisor.load(Ordering::Relaxed) {
                    return Err(Error::InvalidArgument("ZeroDivisionError".into()));
                }
                <i64 as Element>::into_buffer(v)
            }
        };
        Tensor::from_buffer(buffer, &out_shape).to_dtype(dtype)
    }
}

impl Variable {
    pub(crate) fn binary(&self, other: &Variable, op: BinaryOp) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::Binary(op),
            &[self, other],
            || {
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
                                save_if(needs[1], out)
                                    .map(|_| SavedTensor::output(out, "PowBackward1")),
                            ],
                        ),
                    }
                }))
            },
        )
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

    /// A Python-style scalar operand: a wrapped number ([`Tensor::wrapped_number`],
    /// Note [Wrapped scalars]) that holds the value exactly and has PyTorch's
    /// wrapped-number promotion: it never widens a tensor of its own kind, so
    /// `float32_tensor * 2.5` stays float32, `uint8_tensor + 300` stays uint8 (adding
    /// 44) and `int_tensor * 2.5` becomes float32; `int16_tensor / 32768` divides by
    /// 32768. A bool stays bool, so ops that refuse bool operands (subtraction) still
    /// see one. `self` is unused: the op decides how the number is converted.
    pub fn wrap_scalar(&self, value: Scalar) -> Variable {
        Variable::from_tensor(Tensor::wrapped_number(value))
    }

    /// A [`MathBinaryOp`] of two tensors with broadcasting, recorded with its rule.
    pub fn math_binary(&self, other: &Variable, op: MathBinaryOp) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::MathBinary(op),
            &[self, other],
            || {
                let result = self.tensor().math_binary(&other.tensor(), op)?;
                Ok(Variable::record(result, &[self, other], |needs, out| {
                    let (a, b) = InputShape::pair(self, other, out);
                    let both = || {
                        smallvec![
                            Some(SavedTensor::input(self)),
                            Some(SavedTensor::input(other))
                        ]
                    };
                    match op {
                        MathBinaryOp::Atan2 => (Rule::Atan2 { a, b }, both()),
                        MathBinaryOp::Maximum => (Rule::Maximum { a, b }, both()),
                        MathBinaryOp::Minimum => (Rule::Minimum { a, b }, both()),
                        MathBinaryOp::Fmax => (Rule::Fmax { a, b }, both()),
                        MathBinaryOp::Fmin => (Rule::Fmin { a, b }, both()),
                        MathBinaryOp::Fmod | MathBinaryOp::Remainder => {
                            let saved = if needs[1] { both() } else { smallvec![] };
                            if op == MathBinaryOp::Fmod {
                                (Rule::Fmod { a, b }, saved)
                            } else {
                                (Rule::Remainder { a, b }, saved)
                            }
                        }
                        MathBinaryOp::Hypot => (
                            Rule::Hypot { a, b },
                            smallvec![
                                Some(SavedTensor::input(self)),
                                Some(SavedTensor::input(other)),
                                Some(SavedTensor::output(out, "HypotBackward0"))
                            ],
                        ),
                        MathBinaryOp::Logaddexp => (Rule::Logaddexp { a, b }, both()),
                        MathBinaryOp::DivTrunc | MathBinaryOp::DivFloor => {
                            (Rule::DivRounding { a, b }, smallvec![])
                        }
                        MathBinaryOp::Logaddexp2 => (Rule::Logaddexp2 { a, b }, both()),
                        MathBinaryOp::Xlogy => (Rule::Xlogy { a, b }, both()),
                        MathBinaryOp::Xlog1py => (Rule::Xlog1py { a, b }, both()),
                        MathBinaryOp::Copysign => (
                            Rule::Copysign { a, b },
                            smallvec![
                                Some(SavedTensor::input(self)),
                                Some(SavedTensor::output(out, "CopysignBackward0"))
                            ],
                        ),
                    }
                }))
            },
        )
    }

    /// `fmod`, `remainder`, `copysign` or `xlogy` with a number as the second operand
    /// (PyTorch's `.Scalar` overloads: FmodBackward0, RemainderBackward0,
    /// CopysignBackward1, XlogyBackward2). The other ops of [`MathBinaryOp`] take only tensors.
    pub fn math_binary_scalar(&self, other: Scalar, op: MathBinaryOp) -> Result<Variable> {
        if matches!(op, MathBinaryOp::Xlogy | MathBinaryOp::Xlog1py) {
            return self.xlogy_scalar(other, op == MathBinaryOp::Xlog1py);
        }
        let scalar = self.wrap_scalar(other);
        let result = self.tensor().math_binary(&scalar.tensor(), op)?;
        Ok(Variable::record(result, &[self], |_, out| match op {
            MathBinaryOp::Copysign => (
                Rule::CopysignScalar,
                smallvec![
                    Some(SavedTensor::input(self)),
                    Some(SavedTensor::output(out, "CopysignBackward1"))
                ],
            ),
            _ => (
                Rule::FmodScalar {
                    remainder: op == MathBinaryOp::Remainder,
                },
                smallvec![],
            ),
        }))
    }

    /// `base ** self` for a number `base` (PowBackward2), with the wrapped-number
    /// promotion of `base` (`2 ** int_tensor` stays int64).
    pub fn pow_scalar_base(&self, base: Scalar) -> Result<Variable> {
        let result = self
            .wrap_scalar(base)
            .tensor()
            .binary(&self.tensor(), BinaryOp::Pow)?;
        let base = base.to_f64();
        Ok(Variable::record(result, &[self], |_, out| {
            (
                Rule::PowScalarBase { base },
                smallvec![
                    Some(SavedTensor::input(self)),
                    Some(SavedTensor::output(out, "PowBackward2"))
                ],
            )
        }))
    }

    /// `floor_divide(self, other)` (`//`): [`MathBinaryOp::DivFloor`], recorded with
    /// PyTorch's "NotImplemented" node, whose backward is an error.
    pub fn floor_divide(&self, other: &Variable) -> Result<Variable> {
        let result = self
            .tensor()
            .math_binary(&other.tensor(), MathBinaryOp::DivFloor)?;
        Ok(Variable::record(result, &[self, other], |_, _| {
            (
                Rule::NotImplemented("the derivative for 'floor_divide' is not implemented."),
                smallvec![],
            )
        }))
    }

    /// `result` recorded over `inputs` with PyTorch's "NotImplemented" node: it
    /// requires grad when an input does, and its backward fails with `message`.
    pub(crate) fn record_not_differentiable(
        result: Tensor,
        inputs: &[&Variable],
        message: &'static str,
    ) -> Variable {
        Variable::record(result, inputs, |_, _| {
            (Rule::NotImplemented(message), smallvec![])
        })
    }

    /// [`Variable::floor_divide`] in place.
    #[track_caller]
    pub fn floor_divide_(&self, other: &Variable) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.in_place(Some(other), site, |s| s.floor_divide(other))
    }

    /// [`Variable::math_binary`] in place (`atan2_`, `fmod_`, ...).
    #[track_caller]
    pub fn math_binary_(&self, other: &Variable, op: MathBinaryOp) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.in_place(Some(other), site, |s| s.math_binary(other, op))
    }

    /// [`Variable::math_binary_scalar`] in place.
    #[track_caller]
    pub fn math_binary_scalar_(&self, other: Scalar, op: MathBinaryOp) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.in_place(None, site, |s| s.math_binary_scalar(other, op))
    }

    /// `self * log(other)`, 0 where `self == 0` (even where `other == 0`), NaN where
    /// `other` is NaN; integer and bool operands compute in the default float dtype.
    pub fn xlogy(&self, other: &Variable) -> Result<Variable> {
        self.math_binary(other, MathBinaryOp::Xlogy)
    }

    /// `self * log1p(other)` with `xlogy`'s rules (`rustgrad.special.xlog1py`).
    pub fn xlog1py(&self, other: &Variable) -> Result<Variable> {
        self.math_binary(other, MathBinaryOp::Xlog1py)
    }

    /// `xlogy(self, other)` (or `xlog1py` when `log1p`) for a number `other`, with the
    /// wrapped-number promotion (XlogyBackward2 / SpecialXlog1PyBackward2).
    pub fn xlogy_scalar(&self, other: Scalar, log1p: bool) -> Result<Variable> {
        let scalar = self.wrap_scalar(other);
        let result = self
            .tensor()
            .math_binary(&scalar.tensor(), xlogy_op(log1p))?;
        let other = other.to_f64();
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::XlogyScalarOther { other, log1p },
                smallvec![Some(SavedTensor::input(self))],
            )
        }))
    }

    /// `xlogy(value, self)` (or `xlog1py` when `log1p`) for a number `value`, with the
    /// wrapped-number promotion (XlogyBackward1 / SpecialXlog1PyBackward1).
    pub fn xlogy_scalar_self(&self, value: Scalar, log1p: bool) -> Result<Variable> {
        let scalar = self.wrap_scalar(value);
        let result = scalar
            .tensor()
            .math_binary(&self.tensor(), xlogy_op(log1p))?;
        let value = value.to_f64();
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::XlogyScalarSelf { value, log1p },
                smallvec![Some(SavedTensor::input(self))],
            )
        }))
    }

    /// `float_power(self, exponent)`: both operands converted to float64 (recorded as
    /// ToCopyBackward0), then `pow` (PowBackward1), as PyTorch composes it.
    pub fn float_power(&self, exponent: &Variable) -> Result<Variable> {
        self.to_dtype(DType::F64)?
            .pow(&exponent.to_dtype(DType::F64)?)
    }

    /// `float_power(self, exponent)` for a number exponent: float64 `pow` (PowBackward0).
    pub fn float_power_scalar(&self, exponent: Scalar) -> Result<Variable> {
        self.to_dtype(DType::F64)?
            .pow_scalar_value(Scalar::Float(exponent.to_f64()))
    }

    /// `float_power(base, self)` for a number base: float64 `pow` (PowBackward2).
    pub fn float_power_scalar_base(&self, base: Scalar) -> Result<Variable> {
        self.to_dtype(DType::F64)?
            .pow_scalar_base(Scalar::Float(base.to_f64()))
    }

    /// `float_power_`: `self` must be float64 (PyTorch's "the base given to float_power_
    /// has dtype Float but the operation's result requires dtype Double").
    #[track_caller]
    pub fn float_power_(&self, exponent: &Variable) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.check_float_power_base()?;
        self.in_place(Some(exponent), site, |s| s.float_power(exponent))
    }

    /// [`Variable::float_power_`] with a number exponent.
    #[track_caller]
    pub fn float_power_scalar_(&self, exponent: Scalar) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.check_float_power_base()?;
        self.in_place(None, site, |s| s.float_power_scalar(exponent))
    }

    fn check_float_power_base(&self) -> Result<()> {
        if self.dtype() == DType::F64 {
            return Ok(());
        }
        Err(Error::DType {
            op: "float_power_",
            message: format!(
                "the base given to float_power_ has dtype {} but the operation's result requires dtype Double",
                self.dtype().scalar_type_name()
            ),
        })
    }

    /// `atan2(self, other)`.
    pub fn atan2(&self, other: &Variable) -> Result<Variable> {
        self.math_binary(other, MathBinaryOp::Atan2)
    }

    /// The larger of each pair; NaN if either is NaN.
    pub fn maximum(&self, other: &Variable) -> Result<Variable> {
        self.math_binary(other, MathBinaryOp::Maximum)
    }

    /// The smaller of each pair; NaN if either is NaN.
    pub fn minimum(&self, other: &Variable) -> Result<Variable> {
        self.math_binary(other, MathBinaryOp::Minimum)
    }

    /// The larger of each pair, ignoring a NaN.
    pub fn fmax(&self, other: &Variable) -> Result<Variable> {
        self.math_binary(other, MathBinaryOp::Fmax)
    }

    /// The smaller of each pair, ignoring a NaN.
    pub fn fmin(&self, other: &Variable) -> Result<Variable> {
        self.math_binary(other, MathBinaryOp::Fmin)
    }

    /// C's `fmod` (the dividend's sign).
    pub fn fmod(&self, other: &Variable) -> Result<Variable> {
        self.math_binary(other, MathBinaryOp::Fmod)
    }

    /// Python's `%` (the divisor's sign).
    pub fn remainder(&self, other: &Variable) -> Result<Variable> {
        self.math_binary(other, MathBinaryOp::Remainder)
    }

    /// `|self|` with the sign of `other`.
    pub fn copysign(&self, other: &Variable) -> Result<Variable> {
        self.math_binary(other, MathBinaryOp::Copysign)
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
        crate::jit::op(
            || crate::jit::Op::Rsub,
            &[self, other],
            || {
                let result = other.tensor().binary(&self.tensor(), BinaryOp::Sub)?;
                Ok(Variable::record(result, &[other, self], |_, out| {
                    let (a, b) = InputShape::pair(other, self, out);
                    (Rule::Rsub { a, b }, smallvec![])
                }))
            },
        )
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
