//! Elementwise ops of one tensor (and a scalar): neg, exp, log, sqrt, tanh, sigmoid,
//! relu, abs, sign, pow with a scalar exponent, clamp; and the math functions and
//! activations of [`MathOp`] (rsqrt, exp2, expm1, log1p, log2, log10, the trigonometric
//! and hyperbolic functions, reciprocal, erf, erfinv, the rounding functions, frac,
//! logsigmoid, silu, mish, elu/selu/celu, gelu, softplus, leaky_relu, hardtanh/relu6,
//! hardsigmoid, hardswish), plus square and softsign composed of other ops.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::{saved_at, shape_of, zero_like, zeros_like, Grads, Save, Shape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::kernels::math::{EluKind, MathFloat, MathOp, OnIntegers};
use crate::storage::WriteSite;
use crate::tensor::{BinaryOp, CmpOp, Scalar, Tensor, UnaryOp};
use crate::variable::SavedTensor;
use crate::variable::Variable;
use smallvec::smallvec;
use std::panic::Location;

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// `a ** exponent`; saved `[a]`.
    PowScalar { exponent: f64 },
    /// `a / number` as ATen's `div.Scalar` overload (DivBackward1): what PyTorch's C++
    /// composites record when they divide by a number.
    DivScalar { divisor: f64 },
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
    /// `sgn(a)`, sign for real dtypes (SgnBackward0): zero gradient.
    Sgn,
    /// `clamp(a, min, max)`; saved `[a]`.
    Clamp { min: Option<f64>, max: Option<f64> },
    /// `clamp_min(a, min)`; saved `[a]`.
    ClampMin(f64),
    /// `clamp_max(a, max)`; saved `[a]`.
    ClampMax(f64),
    /// An in-place comparison (`a.eq_(b)`): the result, 0 or 1 in `a`'s dtype, does not
    /// depend on `a` or `b` smoothly, so both get zero gradients. `other` is the shape
    /// of a tensor operand (`None` for a number: EqBackward0, else EqBackward1).
    CompareInPlace { op: CmpOp, other: Option<Shape> },
    /// A [`MathOp`]; saved `[a]` or `[out]` as [`math_saves`] says.
    Math(MathOp),
    /// The in-place `elu_` / `celu_` / `selu_` / `leaky_relu_` (EluBackward1,
    /// CeluBackward1, LeakyReluBackward1): the derivative from the result, as PyTorch's
    /// `is_result` backward; saved `[out]`.
    MathResult(MathOp),
    /// `nan_to_num(a)` (forward in `logical.rs`); saved `[a]`.
    NanToNum,
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::PowScalar { .. } => "PowBackward0",
            Rule::DivScalar { .. } => "DivBackward1",
            Rule::Neg => "NegBackward0",
            Rule::Exp => "ExpBackward0",
            Rule::Log => "LogBackward0",
            Rule::Sqrt => "SqrtBackward0",
            Rule::Tanh => "TanhBackward0",
            Rule::Sigmoid => "SigmoidBackward0",
            Rule::Relu => "ReluBackward0",
            Rule::Abs => "AbsBackward0",
            Rule::Sign => "SignBackward0",
            Rule::Sgn => "SgnBackward0",
            Rule::Clamp { .. } => "ClampBackward1",
            Rule::ClampMin(_) => "ClampMinBackward0",
            Rule::ClampMax(_) => "ClampMaxBackward0",
            Rule::CompareInPlace { op, other } => compare_grad_fn_name(*op, other.is_some()),
            Rule::Math(op) => math_grad_fn_name(*op),
            Rule::MathResult(MathOp::Elu {
                kind: EluKind::Celu,
                ..
            }) => "CeluBackward1",
            Rule::MathResult(MathOp::LeakyRelu { .. }) => "LeakyReluBackward1",
            Rule::MathResult(_) => "EluBackward1",
            Rule::NanToNum => "NanToNumBackward0",
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
        let g = grad;
        Ok(match self {
            Rule::PowScalar { exponent } => {
                let x = saved_at(saved, 0)?;
                let ga = if *exponent == 0.0 {
                    zeros_like(g)?
                } else {
                    g.mul(&x.pow_scalar(exponent - 1.0)?.mul_scalar(*exponent)?)?
                };
                smallvec![Some(ga)]
            }
            Rule::DivScalar { divisor } => smallvec![Some(g.div_scalar(*divisor)?)],
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
            Rule::Sign | Rule::Sgn => smallvec![Some(zeros_like(g)?)],
            Rule::Clamp { .. } | Rule::ClampMin(_) | Rule::ClampMax(_) => {
                let (min, max) = match self {
                    Rule::ClampMin(lo) => (Some(*lo), None),
                    Rule::ClampMax(hi) => (None, Some(*hi)),
                    Rule::Clamp { min, max } => (*min, *max),
                    _ => (None, None),
                };
                // PyTorch 2.x with number bounds: the gradient passes strictly inside
                // (min < x < max); at a bound and outside it is 0, and so for NaN.
                let x = saved_at(saved, 0)?.tensor();
                let mut mask = Tensor::full(x.shape(), 1.0, DType::Bool)?;
                if let Some(lo) = min {
                    mask = mask.binary(
                        &x.compare(&Tensor::scalar(lo, x.dtype()), CmpOp::Gt)?,
                        crate::tensor::BinaryOp::Mul,
                    )?;
                }
                if let Some(hi) = max {
                    mask = mask.binary(
                        &x.compare(&Tensor::scalar(hi, x.dtype()), CmpOp::Lt)?,
                        crate::tensor::BinaryOp::Mul,
                    )?;
                }
                smallvec![Some(Variable::where_cond(&mask, g, &zero_like(g))?)]
            }
            Rule::CompareInPlace { other, .. } => smallvec![
                Some(zeros_like(g)?),
                match other {
                    Some(shape) if needs.get(1).copied().unwrap_or(false) =>
                        Some(Variable::from_tensor(Tensor::zeros(shape, g.dtype())?),),
                    _ => None,
                },
            ],
            Rule::Math(op) => smallvec![Some(math_backward(*op, saved, g)?)],
            Rule::MathResult(op) => smallvec![Some(math_result_backward(*op, saved, g)?)],
            Rule::NanToNum => {
                // The gradient passes where `a` is finite (PyTorch multiplies by
                // isfinite(a); `where` keeps an infinite incoming gradient out of the
                // replaced elements: Note [Zero gradients]).
                let finite = saved_at(saved, 0)?
                    .tensor()
                    .is_class(crate::kernels::logical::FloatClass::Finite)?;
                smallvec![Some(Variable::where_cond(&finite, g, &zero_like(g))?)]
            }
        })
    }
}

/// PyTorch's grad_fn class name of an in-place comparison (`...Backward0` with a number
/// operand, `...Backward1` with a tensor).
fn compare_grad_fn_name(op: CmpOp, tensor: bool) -> &'static str {
    match (op, tensor) {
        (CmpOp::Eq, false) => "EqBackward0",
        (CmpOp::Eq, true) => "EqBackward1",
        (CmpOp::Ne, false) => "NeBackward0",
        (CmpOp::Ne, true) => "NeBackward1",
        (CmpOp::Lt, false) => "LtBackward0",
        (CmpOp::Lt, true) => "LtBackward1",
        (CmpOp::Le, false) => "LeBackward0",
        (CmpOp::Le, true) => "LeBackward1",
        (CmpOp::Gt, false) => "GtBackward0",
        (CmpOp::Gt, true) => "GtBackward1",
        (CmpOp::Ge, false) => "GeBackward0",
        (CmpOp::Ge, true) => "GeBackward1",
    }
}

/// PyTorch's grad_fn class name of a [`MathOp`].
fn math_grad_fn_name(op: MathOp) -> &'static str {
    match op {
        MathOp::Rsqrt => "RsqrtBackward0",
        MathOp::Exp2 => "Exp2Backward0",
        MathOp::Expm1 => "Expm1Backward0",
        MathOp::Log1p => "Log1PBackward0",
        MathOp::Log2 => "Log2Backward0",
        MathOp::Log10 => "Log10Backward0",
        MathOp::Sin => "SinBackward0",
        MathOp::Cos => "CosBackward0",
        MathOp::Tan => "TanBackward0",
        MathOp::Asin => "AsinBackward0",
        MathOp::Acos => "AcosBackward0",
        MathOp::Atan => "AtanBackward0",
        MathOp::Sinh => "SinhBackward0",
        MathOp::Cosh => "CoshBackward0",
        MathOp::Reciprocal => "ReciprocalBackward0",
        MathOp::Erf => "ErfBackward0",
        MathOp::Erfinv => "ErfinvBackward0",
        MathOp::Floor => "FloorBackward0",
        MathOp::Ceil => "CeilBackward0",
        MathOp::Round { decimals: 0 } => "RoundBackward0",
        MathOp::Round { .. } => "RoundBackward1",
        MathOp::Trunc => "TruncBackward0",
        MathOp::Frac => "FracBackward0",
        MathOp::LogSigmoid => "LogSigmoidBackward0",
        MathOp::Silu => "SiluBackward0",
        MathOp::Mish => "MishBackward0",
        MathOp::Elu {
            kind: EluKind::Celu,
            ..
        } => "CeluBackward0",
        MathOp::Elu { .. } => "EluBackward0",
        MathOp::Gelu { .. } => "GeluBackward0",
        MathOp::Softplus { .. } => "SoftplusBackward0",
        MathOp::LeakyRelu { .. } => "LeakyReluBackward0",
        MathOp::Hardtanh { .. } => "HardtanhBackward0",
        MathOp::Hardsigmoid => "HardsigmoidBackward0",
        MathOp::Hardswish => "HardswishBackward0",
    }
}

/// What the rule of a [`MathOp`] saves: the output where the derivative is a function of
/// it (as PyTorch's formulas use `result`), nothing for the zero-gradient rounding
/// functions and frac, else the input.
fn math_saves(op: MathOp) -> Save {
    match op {
        MathOp::Rsqrt
        | MathOp::Exp2
        | MathOp::Expm1
        | MathOp::Tan
        | MathOp::Reciprocal
        | MathOp::Erfinv => Save::Output,
        MathOp::Floor | MathOp::Ceil | MathOp::Round { .. } | MathOp::Trunc | MathOp::Frac => {
            Save::Nothing
        }
        _ => Save::Input,
    }
}

/// A bool mask of `x op value`, for the piecewise rules.
fn mask(x: &Variable, op: CmpOp, value: f64) -> Result<Tensor> {
    x.tensor().compare(&Tensor::scalar(value, x.dtype()), op)
}

/// The backward of a [`MathOp`]: PyTorch's formulas (`derivatives.yaml` and the
/// activations' `*_backward` kernels) written with differentiable ops, so that second
/// derivatives follow. Piecewise rules select with `where`, never multiply by a mask
/// (Note [Zero gradients]).
/// The argument checks of [`Variable::math`] that the kernels do not make.
fn check_math(op: MathOp) -> Result<()> {
    if let MathOp::Elu {
        alpha,
        kind: EluKind::Celu,
    } = op
    {
        if alpha == 0.0 {
            return Err(Error::InvalidArgument(
                "ZeroDivisionError: alpha cannot be 0 for CELU".into(),
            ));
        }
    }
    Ok(())
}

/// The backward of an in-place activation from its saved result `y` (PyTorch's
/// `elu_backward(is_result=true)` / `leaky_relu_backward(self_is_result=true)`).
fn math_result_backward(op: MathOp, saved: &[Option<Variable>], g: &Variable) -> Result<Variable> {
    let y = saved_at(saved, 0)?;
    match op {
        MathOp::Elu { alpha, kind } => {
            let (alpha, scale, input_scale) = kind.params(alpha);
            // y <= 0: y = scale * alpha * (exp(x * input_scale) - 1), so
            // dy/dx = input_scale * (y + scale * alpha).
            let negative = g.mul(&y.add_scalar(scale * alpha)?.mul_scalar(input_scale)?)?;
            Variable::where_cond(&mask(y, CmpOp::Gt, 0.0)?, &g.mul_scalar(scale)?, &negative)
        }
        MathOp::LeakyRelu { negative_slope } => {
            if negative_slope < 0.0 {
                return Err(Error::InvalidArgument("In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward calculation with negative slope".into()));
            }
            Variable::where_cond(&mask(y, CmpOp::Gt, 0.0)?, g, &g.mul_scalar(negative_slope)?)
        }
        other => math_backward(other, saved, g),
    }
}

fn math_backward(op: MathOp, saved: &[Option<Variable>], g: &Variable) -> Result<Variable> {
    use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_SQRT_PI, LN_10, LN_2, PI};
    let s = || saved_at(saved, 0);
    match op {
        MathOp::Rsqrt => g.mul(&s()?.pow_scalar(3.0)?.mul_scalar(-0.5)?),
        MathOp::Exp2 => g.mul(&s()?.mul_scalar(LN_2)?),
        MathOp::Expm1 => g.mul(&s()?.add_scalar(1.0)?),
        MathOp::Log1p => g.div(&s()?.add_scalar(1.0)?),
        MathOp::Log2 => g.div(&s()?.mul_scalar(LN_2)?),
        MathOp::Log10 => g.div(&s()?.mul_scalar(LN_10)?),
        MathOp::Sin => g.mul(&s()?.cos()?),
        MathOp::Cos => g.mul(&s()?.sin()?.neg()?),
        MathOp::Tan => {
            let y = s()?;
            g.mul(&y.mul(y)?.add_scalar(1.0)?)
        }
        MathOp::Asin | MathOp::Acos => {
            let x = s()?;
            let d = x.mul(x)?.rsub_scalar(1.0)?.rsqrt()?;
            let d = if op == MathOp::Acos { d.neg()? } else { d };
            g.mul(&d)
        }
        MathOp::Atan => {
            let x = s()?;
            g.div(&x.mul(x)?.add_scalar(1.0)?)
        }
        MathOp::Sinh => g.mul(&s()?.cosh()?),
        MathOp::Cosh => g.mul(&s()?.sinh()?),
        MathOp::Reciprocal => {
            let y = s()?;
            g.neg()?.mul(&y.mul(y)?)
        }
        MathOp::Erf => {
            let x = s()?;
            g.mul(&x.mul(x)?.neg()?.exp()?.mul_scalar(FRAC_2_SQRT_PI)?)
        }
        MathOp::Erfinv => {
            let y = s()?;
            g.mul(&y.mul(y)?.exp()?.mul_scalar(0.5 * PI.sqrt())?)
        }
        MathOp::Floor | MathOp::Ceil | MathOp::Round { .. } | MathOp::Trunc => zeros_like(g),
        MathOp::Frac => Ok(g.clone()),
        MathOp::LogSigmoid => g.mul(&s()?.neg()?.sigmoid()?),
        MathOp::Silu => {
            let x = s()?;
            let sig = x.sigmoid()?;
            g.mul(&sig.mul(&x.mul(&sig.rsub_scalar(1.0)?)?.add_scalar(1.0)?)?)
        }
        MathOp::Mish => {
            let x = s()?;
            let t = x.softplus(1.0, 20.0)?.tanh()?;
            let d = x
                .mul(&x.sigmoid()?)?
                .mul(&t.mul(&t)?.rsub_scalar(1.0)?)?
                .add(&t)?;
            g.mul(&d)
        }
        MathOp::Elu { alpha, kind } => {
            let x = s()?;
            let (alpha, scale, input_scale) = kind.params(alpha);
            let positive = g.mul_scalar(scale)?;
            let negative = g.mul(
                &x.mul_scalar(input_scale)?
                    .exp()?
                    .mul_scalar(input_scale * alpha * scale)?,
            )?;
            Variable::where_cond(&mask(x, CmpOp::Gt, 0.0)?, &positive, &negative)
        }
        MathOp::Gelu { tanh: false } => {
            let x = s()?;
            let cdf = x
                .mul_scalar(FRAC_1_SQRT_2)?
                .erf()?
                .add_scalar(1.0)?
                .mul_scalar(0.5)?;
            let pdf = x
                .mul(x)?
                .mul_scalar(-0.5)?
                .exp()?
                .mul_scalar(FRAC_2_SQRT_PI * FRAC_1_SQRT_2 * 0.5)?;
            g.mul(&x.mul(&pdf)?.add(&cdf)?)
        }
        MathOp::Gelu { tanh: true } => {
            let x = s()?;
            let (beta, kappa) = (FRAC_2_SQRT_PI * FRAC_1_SQRT_2, 0.044715);
            let x2 = x.mul(x)?;
            let t = x
                .mul(&x2.mul_scalar(kappa)?.add_scalar(1.0)?)?
                .mul_scalar(beta)?
                .tanh()?;
            let left_derivative = t.add_scalar(1.0)?.mul_scalar(0.5)?;
            let right_derivative = t
                .mul(&t)?
                .rsub_scalar(1.0)?
                .mul(&x2.mul_scalar(3.0 * kappa)?.add_scalar(1.0)?)?
                .mul_scalar(beta)?;
            g.mul(
                &x.mul_scalar(0.5)?
                    .mul(&right_derivative)?
                    .add(&left_derivative)?,
            )
        }
        MathOp::Softplus { beta, threshold } => {
            let x = s()?;
            let bx = x.mul_scalar(beta)?;
            let linear = mask(&bx, CmpOp::Gt, threshold)?;
            Variable::where_cond(&linear, g, &g.mul(&bx.sigmoid()?)?)
        }
        MathOp::LeakyRelu { negative_slope } => {
            let x = s()?;
            Variable::where_cond(&mask(x, CmpOp::Gt, 0.0)?, g, &g.mul_scalar(negative_slope)?)
        }
        MathOp::Hardtanh { min_val, max_val } => {
            // PyTorch's hardtanh_backward: 0 where `x <= min_val || x >= max_val`, so a NaN
            // input passes the gradient.
            let x = s()?;
            let blocked = mask(x, CmpOp::Le, min_val)?
                .binary(&mask(x, CmpOp::Ge, max_val)?, BinaryOp::Add)?;
            Variable::where_cond(&blocked, &zero_like(g), g)
        }
        MathOp::Hardsigmoid => {
            let x = s()?;
            let inside =
                mask(x, CmpOp::Gt, -3.0)?.binary(&mask(x, CmpOp::Lt, 3.0)?, BinaryOp::Mul)?;
            Variable::where_cond(&inside, &g.div_scalar(6.0)?, &zero_like(g))
        }
        MathOp::Hardswish => {
            let x = s()?;
            let middle = g.mul(&x.div_scalar(3.0)?.add_scalar(0.5)?)?;
            let upper = Variable::where_cond(&mask(x, CmpOp::Le, 3.0)?, &middle, g)?;
            Variable::where_cond(&mask(x, CmpOp::Lt, -3.0)?, &zero_like(g), &upper)
        }
    }
}

impl Tensor {
    /// A [`MathOp`] elementwise, with PyTorch's dtype rules: float tensors keep their
    /// dtype; int64 and bool are computed in the default float dtype by the floating
    /// functions, copied by the rounding functions (int64 only), clamped by hardtanh
    /// (int64 only) and refused by the rest (NotImplementedError naming PyTorch's
    /// kernel).
    pub fn math(&self, op: MathOp) -> Result<Tensor> {
        let dtype = self.dtype();
        let refuse = || Error::unsupported_dtype(op.kernel_name(), dtype);
        let src = if dtype.is_floating_point() {
            self.clone()
        } else {
            match (op.on_integers(), dtype) {
                (OnIntegers::Promote, _) => self.to_dtype(DType::default_float())?,
                (OnIntegers::Identity, d) if d.is_integer() => return self.deep_clone(),
                (OnIntegers::Clamp, DType::Bool) => {
                    return Err(Error::not_implemented_for_dtype(
                        "Bool inputs not supported for hardtanh",
                    ))
                }
                (OnIntegers::Clamp, _) => {
                    let MathOp::Hardtanh { min_val, max_val } = op else {
                        return Err(refuse());
                    };
                    // PyTorch writes into an int64 result: the bounds are truncated.
                    let bound = |v: f64| Scalar::Int(Scalar::Float(v).cast::<i64>());
                    return self.clamp(Some(bound(min_val)), Some(bound(max_val)));
                }
                _ => return Err(refuse()),
            }
        };
        fn map<T: MathFloat>(src: &Tensor, op: MathOp) -> Result<Tensor> {
            let v = src.read(|s: &[T]| elementwise::map1(s, src.layout(), |x: T| op.apply(x)))?;
            Ok(Tensor::from_buffer(T::into_buffer(v), src.shape()))
        }
        match src.dtype() {
            DType::F32 => map::<f32>(&src, op),
            DType::F64 => map::<f64>(&src, op),
            // Computed in float32, rounded back once (Note [Storage dtypes]).
            DType::F16 | DType::BF16 => src.via_f32(|t| map::<f32>(t, op)),
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => {
                Err(refuse())
            }
        }
    }
}

impl Variable {
    pub(crate) fn unary(&self, op: UnaryOp, kind: Rule, save: Save) -> Result<Variable> {
        let Some(scope) = crate::jit::Scope::enter() else {
            return self.unary_impl(op, kind, save);
        };
        let out = self.unary_impl(op, kind.clone(), save)?;
        scope.finish(
            || crate::jit::Op::Unary(op, kind, save),
            &[self],
            std::slice::from_ref(&out),
        );
        Ok(out)
    }

    fn unary_impl(&self, op: UnaryOp, kind: Rule, save: Save) -> Result<Variable> {
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

    /// `sgn`: the sign for real dtypes, recorded as SgnBackward0 (zero gradient).
    pub fn sgn(&self) -> Result<Variable> {
        self.unary(UnaryOp::Sign, Rule::Sgn, Save::Nothing)
    }

    /// [`Variable::sgn`] in place.
    #[track_caller]
    pub fn sgn_(&self) -> Result<()> {
        self.in_place(None, WriteSite::Rust(Location::caller()), |s| s.sgn())
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

    /// `self / divisor` as ATen's `div(Tensor, Scalar)` overload, recorded as
    /// DivBackward1: what PyTorch's C++ composites (`cross_entropy` of class
    /// probabilities, ...) record when they divide by a number. Python's
    /// `tensor / number` wraps the number into a tensor (DivBackward0): that is
    /// [`Variable::div_scalar`]. See Note [Wrapped scalars].
    pub fn div_number(&self, divisor: Scalar) -> Result<Variable> {
        let result = self
            .tensor()
            .binary(&Tensor::wrapped_number(divisor), BinaryOp::Div)?;
        let divisor = divisor.to_f64();
        Ok(Variable::record(result, &[self], |_, _| {
            (Rule::DivScalar { divisor }, smallvec![])
        }))
    }

    /// A [`MathOp`] elementwise (see [`Tensor::math`] for dtypes), recorded with its
    /// backward rule.
    pub fn math(&self, op: MathOp) -> Result<Variable> {
        crate::jit::op(
            || crate::jit::Op::Math(op),
            &[self],
            || {
                check_math(op)?;
                let result = self.tensor().math(op)?;
                let kind = Rule::Math(op);
                Ok(Variable::record(result, &[self], |_, out| {
                    let saved = match math_saves(op) {
                        Save::Nothing => smallvec![],
                        Save::Input => smallvec![Some(SavedTensor::input(self))],
                        Save::Output => smallvec![Some(SavedTensor::output(out, kind.name()))],
                    };
                    (kind, saved)
                }))
            },
        )
    }

    /// A [`MathOp`] in place (`sin_`, `floor_`, `elu_`, ...): through
    /// Note [In-place ops], so an int64 tensor refuses a floating function with PyTorch's
    /// cast error.
    #[track_caller]
    pub fn math_(&self, op: MathOp) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        match op {
            // PyTorch's in-place activations save their result (EluBackward1, ...).
            MathOp::Elu { .. } | MathOp::LeakyRelu { .. } => {
                self.in_place(None, site, |s| s.math_result(op))
            }
            _ => self.in_place(None, site, |s| s.math(op)),
        }
    }

    /// `math(op)` recorded as [`Rule::MathResult`], for the in-place activations.
    fn math_result(&self, op: MathOp) -> Result<Variable> {
        check_math(op)?;
        let result = self.tensor().math(op)?;
        let kind = Rule::MathResult(op);
        Ok(Variable::record(result, &[self], |_, out| {
            let saved = SavedTensor::output(out, kind.name());
            (kind, smallvec![Some(saved)])
        }))
    }

    /// `square` in place.
    #[track_caller]
    pub fn square_(&self) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.in_place(None, site, |s| s.square())
    }

    /// `1 / sqrt(self)`.
    pub fn rsqrt(&self) -> Result<Variable> {
        self.math(MathOp::Rsqrt)
    }

    /// `2^self`.
    pub fn exp2(&self) -> Result<Variable> {
        self.math(MathOp::Exp2)
    }

    /// `e^self - 1`.
    pub fn expm1(&self) -> Result<Variable> {
        self.math(MathOp::Expm1)
    }

    /// `ln(1 + self)`.
    pub fn log1p(&self) -> Result<Variable> {
        self.math(MathOp::Log1p)
    }

    /// Base-2 logarithm.
    pub fn log2(&self) -> Result<Variable> {
        self.math(MathOp::Log2)
    }

    /// Base-10 logarithm.
    pub fn log10(&self) -> Result<Variable> {
        self.math(MathOp::Log10)
    }

    /// Sine.
    pub fn sin(&self) -> Result<Variable> {
        self.math(MathOp::Sin)
    }

    /// Cosine.
    pub fn cos(&self) -> Result<Variable> {
        self.math(MathOp::Cos)
    }

    /// Tangent.
    pub fn tan(&self) -> Result<Variable> {
        self.math(MathOp::Tan)
    }

    /// Arcsine.
    pub fn asin(&self) -> Result<Variable> {
        self.math(MathOp::Asin)
    }

    /// Arccosine.
    pub fn acos(&self) -> Result<Variable> {
        self.math(MathOp::Acos)
    }

    /// Arctangent.
    pub fn atan(&self) -> Result<Variable> {
        self.math(MathOp::Atan)
    }

    /// Hyperbolic sine.
    pub fn sinh(&self) -> Result<Variable> {
        self.math(MathOp::Sinh)
    }

    /// Hyperbolic cosine.
    pub fn cosh(&self) -> Result<Variable> {
        self.math(MathOp::Cosh)
    }

    /// `1 / self`.
    pub fn reciprocal(&self) -> Result<Variable> {
        self.math(MathOp::Reciprocal)
    }

    /// `self * self`, PyTorch's `square` (a `pow(2)`: PowBackward0, int64 stays int64).
    pub fn square(&self) -> Result<Variable> {
        self.pow_scalar_value(Scalar::Int(2))
    }

    /// The error function.
    pub fn erf(&self) -> Result<Variable> {
        self.math(MathOp::Erf)
    }

    /// The inverse error function (NaN outside [-1, 1]).
    pub fn erfinv(&self) -> Result<Variable> {
        self.math(MathOp::Erfinv)
    }

    /// Rounds down; zero gradient.
    pub fn floor(&self) -> Result<Variable> {
        self.math(MathOp::Floor)
    }

    /// Rounds up; zero gradient.
    pub fn ceil(&self) -> Result<Variable> {
        self.math(MathOp::Ceil)
    }

    /// Rounds half to even to `decimals` decimal places; zero gradient.
    pub fn round(&self, decimals: i64) -> Result<Variable> {
        self.math(MathOp::Round { decimals })
    }

    /// Rounds toward zero; zero gradient.
    pub fn trunc(&self) -> Result<Variable> {
        self.math(MathOp::Trunc)
    }

    /// `self - trunc(self)`; the gradient passes unchanged.
    pub fn frac(&self) -> Result<Variable> {
        self.math(MathOp::Frac)
    }

    /// `log(sigmoid(self))`.
    pub fn log_sigmoid(&self) -> Result<Variable> {
        self.math(MathOp::LogSigmoid)
    }

    /// `self * sigmoid(self)`.
    pub fn silu(&self) -> Result<Variable> {
        self.math(MathOp::Silu)
    }

    /// `self * tanh(softplus(self))`.
    pub fn mish(&self) -> Result<Variable> {
        self.math(MathOp::Mish)
    }

    /// `self` above 0, else `alpha * (exp(self) - 1)`.
    pub fn elu(&self, alpha: f64) -> Result<Variable> {
        self.math(MathOp::Elu {
            alpha,
            kind: EluKind::Elu,
        })
    }

    /// Scaled ELU with PyTorch's fixed constants.
    pub fn selu(&self) -> Result<Variable> {
        self.math(MathOp::Elu {
            alpha: crate::kernels::math::SELU_ALPHA,
            kind: EluKind::Selu,
        })
    }

    /// `max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`; `alpha` 0 is an error.
    pub fn celu(&self, alpha: f64) -> Result<Variable> {
        self.math(MathOp::Elu {
            alpha,
            kind: EluKind::Celu,
        })
    }

    /// GELU, exact (`tanh` false) or with the tanh approximation.
    pub fn gelu(&self, tanh: bool) -> Result<Variable> {
        self.math(MathOp::Gelu { tanh })
    }

    /// `log(1 + exp(beta * self)) / beta`, linear where `beta * self > threshold`.
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Variable> {
        self.math(MathOp::Softplus { beta, threshold })
    }

    /// `self` above 0, else `negative_slope * self`.
    pub fn leaky_relu(&self, negative_slope: f64) -> Result<Variable> {
        self.math(MathOp::LeakyRelu { negative_slope })
    }

    /// Clamps into `[min_val, max_val]` (HardtanhBackward0: the gradient is 0 at and
    /// beyond the bounds).
    pub fn hardtanh(&self, min_val: f64, max_val: f64) -> Result<Variable> {
        self.math(MathOp::Hardtanh { min_val, max_val })
    }

    /// `hardtanh(self, 0, 6)`.
    pub fn relu6(&self) -> Result<Variable> {
        self.hardtanh(0.0, 6.0)
    }

    /// `clamp(self + 3, 0, 6) / 6`.
    pub fn hardsigmoid(&self) -> Result<Variable> {
        self.math(MathOp::Hardsigmoid)
    }

    /// `self * clamp(self + 3, 0, 6) / 6`.
    pub fn hardswish(&self) -> Result<Variable> {
        self.math(MathOp::Hardswish)
    }

    /// `self / (1 + |self|)`, composed as PyTorch does (DivBackward0; int64 gives the
    /// default float dtype).
    pub fn softsign(&self) -> Result<Variable> {
        let abs = self.abs()?;
        self.div(&abs.add(&abs.wrap_scalar(Scalar::Int(1)))?)
    }

    /// `max(self, min)` with a Python-style scalar bound (ClampMinBackward0; dtype as
    /// [`Variable::clamp_scalar`]).
    pub fn clamp_min(&self, min: Scalar) -> Result<Variable> {
        let result = self.tensor().clamp(Some(min), None)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::ClampMin(min.to_f64()),
                smallvec![Some(SavedTensor::input(self))],
            )
        }))
    }

    /// `min(self, max)` with a Python-style scalar bound (ClampMaxBackward0).
    pub fn clamp_max(&self, max: Scalar) -> Result<Variable> {
        let result = self.tensor().clamp(None, Some(max))?;
        Ok(Variable::record(result, &[self], |_, _| {
            (
                Rule::ClampMax(max.to_f64()),
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

    // ----- in-place forms (Note [In-place ops]) ------------------------------------

    /// `self.op_(other)` for a comparison: `self` becomes 1 where `self op other` holds
    /// and 0 elsewhere, in its own dtype (PyTorch's `eq_`, `lt_`, ...); a tensor
    /// `other` broadcasts to `self`'s shape. Both operands get zero gradients.
    #[track_caller]
    pub fn compare_(&self, other: &Variable, op: CmpOp) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.compare_in_place(other, op, true, site)
    }

    /// [`Variable::compare_`] with a number operand (EqBackward0, ...).
    #[track_caller]
    pub fn compare_scalar_(&self, other: Scalar, op: CmpOp) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.compare_in_place(&self.wrap_scalar(other), op, false, site)
    }

    fn compare_in_place(
        &self,
        other: &Variable,
        op: CmpOp,
        tensor: bool,
        site: WriteSite,
    ) -> Result<()> {
        self.in_place(Some(other), site, |s| {
            let result = s
                .tensor()
                .compare(&other.tensor(), op)?
                .to_dtype(s.dtype())?;
            let other_shape = tensor.then(|| shape_of(other));
            Ok(Variable::record(result, &[s, other], |_, _| {
                (
                    Rule::CompareInPlace {
                        op,
                        other: other_shape,
                    },
                    smallvec![],
                )
            }))
        })
    }

    /// Runs a one-tensor op in place (`exp_`, `abs_`, `sign_`, ...): `op(self)` is
    /// written into `self` and its node becomes `self`'s history (Note [In-place ops]).
    #[track_caller]
    pub fn unary_(&self, op: impl FnOnce(&Variable) -> Result<Variable>) -> Result<()> {
        self.in_place(None, WriteSite::Rust(Location::caller()), op)
    }

    /// `-self` in place.
    #[track_caller]
    pub fn neg_(&self) -> Result<()> {
        self.unary_(Variable::neg)
    }

    /// `e^self` in place.
    #[track_caller]
    pub fn exp_(&self) -> Result<()> {
        self.unary_(Variable::exp)
    }

    /// Natural logarithm in place.
    #[track_caller]
    pub fn log_(&self) -> Result<()> {
        self.unary_(Variable::log)
    }

    /// Square root in place.
    #[track_caller]
    pub fn sqrt_(&self) -> Result<()> {
        self.unary_(Variable::sqrt)
    }

    /// Hyperbolic tangent in place.
    #[track_caller]
    pub fn tanh_(&self) -> Result<()> {
        self.unary_(Variable::tanh)
    }

    /// Logistic sigmoid in place.
    #[track_caller]
    pub fn sigmoid_(&self) -> Result<()> {
        self.unary_(Variable::sigmoid)
    }

    /// Absolute value in place.
    #[track_caller]
    pub fn abs_(&self) -> Result<()> {
        self.unary_(Variable::abs)
    }

    /// Sign in place.
    #[track_caller]
    pub fn sign_(&self) -> Result<()> {
        self.unary_(Variable::sign)
    }

    /// `self ** exponent` in place for a Python-style scalar exponent; an exponent that
    /// changes the dtype (`int_tensor.pow_(2.5)`) is PyTorch's cast error.
    #[track_caller]
    pub fn pow_scalar_(&self, exponent: Scalar) -> Result<()> {
        self.unary_(|s| s.pow_scalar_value(exponent))
    }

    /// `self ** exponent` in place for a tensor exponent (broadcast to `self`).
    #[track_caller]
    pub fn pow_(&self, exponent: &Variable) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.in_place(Some(exponent), site, |s| s.pow(exponent))
    }

    /// [`Variable::clamp_min`] in place.
    #[track_caller]
    pub fn clamp_min_(&self, min: Scalar) -> Result<()> {
        self.check_clamp_scalar_cast(&[Some(min)])?;
        self.unary_(|s| s.clamp_min(min))
    }

    /// [`Variable::clamp_max`] in place.
    #[track_caller]
    pub fn clamp_max_(&self, max: Scalar) -> Result<()> {
        self.check_clamp_scalar_cast(&[Some(max)])?;
        self.unary_(|s| s.clamp_max(max))
    }
}
