//! Elementwise ops of three operands with broadcasting: lerp (number or tensor weight),
//! addcmul, addcdiv and clamp with tensor bounds, and their in-place forms.
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` (the
//! existing binary kernels, in PyTorch's order of operations) and records a node
//! holding this family's [`Rule`]; the rule's `apply` is its backward, written with
//! differentiable ops so that it serves double backward too.

use super::{saved_at, zero_like, Grads, InputShape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::math::MathBinaryOp;
use crate::storage::WriteSite;
use crate::tensor::{BinaryOp, CmpOp, Scalar, Tensor};
use crate::variable::SavedTensor;
use crate::variable::Variable;
use smallvec::{smallvec, SmallVec};
use std::panic::Location;

/// The operands' shapes of a three-input rule, boxed (one allocation) only when
/// broadcasting made one differ from the output's, so a rule stays within 32 bytes.
#[derive(Clone, Debug)]
pub(crate) struct Shapes(Option<Box<[InputShape; 3]>>);

impl Shapes {
    fn of(inputs: &[&Variable], out: &Variable) -> Shapes {
        let shapes: [InputShape; 3] = [0, 1, 2].map(|i| match inputs.get(i) {
            Some(v) => InputShape::of(v, out),
            None => InputShape::of(out, out),
        });
        let differ = inputs.iter().any(|v| v.shape() != out.shape());
        Shapes(differ.then(|| Box::new(shapes)))
    }

    /// Sums `g` to input `i`'s shape.
    fn sum_to(&self, g: &Variable, i: usize) -> Result<Variable> {
        match &self.0 {
            None => Ok(g.clone()),
            Some(s) => g.sum_to(&s[i]),
        }
    }
}

/// Which bounds a tensor clamp has (its inputs are `[self, min?, max?]`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Bounds {
    Min,
    Max,
    Both,
}

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// `lerp(a, end, weight)` with a number weight (LerpBackward0); nothing saved.
    LerpScalar { shapes: Shapes, weight: f64 },
    /// `lerp(a, end, weight)` with a tensor weight (LerpBackward1); saved
    /// `[a, end, weight]`.
    Lerp { shapes: Shapes },
    /// `a + value * t1 * t2` (AddcmulBackward0); saved `[t1, t2]`.
    Addcmul { shapes: Shapes, value: f64 },
    /// `a + value * t1 / t2` (AddcdivBackward0); saved `[t1, t2]`.
    Addcdiv { shapes: Shapes, value: f64 },
    /// `clamp(a, min, max)` with tensor bounds (ClampBackward0); saved `[a, min?, max?]`.
    Clamp { shapes: Shapes, bounds: Bounds },
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::LerpScalar { .. } => "LerpBackward0",
            Rule::Lerp { .. } => "LerpBackward1",
            Rule::Addcmul { .. } => "AddcmulBackward0",
            Rule::Addcdiv { .. } => "AddcdivBackward0",
            Rule::Clamp { .. } => "ClampBackward0",
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
        let mut out: Grads = smallvec![None; needs.len()];
        let mut put = |i: usize, f: &mut dyn FnMut() -> Result<Variable>| -> Result<()> {
            if need(i) {
                out[i] = Some(f()?);
            }
            Ok(())
        };
        match self {
            Rule::LerpScalar { shapes, weight } => {
                put(0, &mut || shapes.sum_to(&g.mul_scalar(1.0 - weight)?, 0))?;
                put(1, &mut || shapes.sum_to(&g.mul_scalar(*weight)?, 1))?;
            }
            Rule::Lerp { shapes } => {
                let (a, end, w) = (
                    saved_at(saved, 0)?,
                    saved_at(saved, 1)?,
                    saved_at(saved, 2)?,
                );
                put(0, &mut || shapes.sum_to(&g.mul(&w.rsub_scalar(1.0)?)?, 0))?;
                put(1, &mut || shapes.sum_to(&g.mul(w)?, 1))?;
                put(2, &mut || shapes.sum_to(&g.mul(&end.sub(a)?)?, 2))?;
            }
            // `t1` is saved only when `t2` needs a gradient (and for addcmul `t2` only
            // when `t1` does): unpacked inside the gradient that uses it.
            Rule::Addcmul { shapes, value } => {
                put(0, &mut || shapes.sum_to(g, 0))?;
                put(1, &mut || {
                    shapes.sum_to(&g.mul(saved_at(saved, 1)?)?.mul_scalar(*value)?, 1)
                })?;
                put(2, &mut || {
                    shapes.sum_to(&g.mul(saved_at(saved, 0)?)?.mul_scalar(*value)?, 2)
                })?;
            }
            Rule::Addcdiv { shapes, value } => {
                let t2 = saved_at(saved, 1)?;
                put(0, &mut || shapes.sum_to(g, 0))?;
                put(1, &mut || shapes.sum_to(&g.mul_scalar(*value)?.div(t2)?, 1))?;
                put(2, &mut || {
                    let t1 = saved_at(saved, 0)?;
                    let d = g.mul_scalar(*value)?.mul(t1)?.div(&t2.mul(t2)?)?.neg()?;
                    shapes.sum_to(&d, 2)
                })?;
            }
            Rule::Clamp { shapes, bounds } => {
                let masks = clamp_masks(saved, *bounds)?;
                let half = g.div_scalar(2.0)?;
                for (i, (whole, tie)) in masks.iter().enumerate() {
                    put(i, &mut || {
                        let part = Variable::where_cond(tie, &half, &zero_like(g))?;
                        shapes.sum_to(&Variable::where_cond(whole, g, &part)?, i)
                    })?;
                }
            }
        }
        Ok(out)
    }
}

/// For each input of a tensor clamp, where it takes the whole gradient and where half
/// (a tie), as PyTorch 2.15 computes them (checked against it on every combination of
/// below, at, above and NaN). With one bound it is `maximum` (`minimum`): a tie splits
/// the gradient and a NaN gives it to both. With both, a tie splits only when
/// `min < max`; `x` takes it unless `x < min` or `x > max` (so a NaN `x` does), `min`
/// where `x < min <= max`, `max` where `x > max >= min` or `max < min`.
fn clamp_masks(
    saved: &[Option<Variable>],
    bounds: Bounds,
) -> Result<SmallVec<[(Tensor, Tensor); 3]>> {
    let x = saved_at(saved, 0)?.tensor();
    let and = |a: &Tensor, b: &Tensor| a.binary(b, BinaryOp::Mul);
    let or = |a: &Tensor, b: &Tensor| a.binary(b, BinaryOp::Add);
    let not = |a: &Tensor| {
        a.compare(
            &Tensor::from_scalar(Scalar::Bool(false), DType::Bool),
            CmpOp::Eq,
        )
    };
    let one_bound = |b: &Tensor, lose: CmpOp, win: CmpOp| -> Result<[(Tensor, Tensor); 2]> {
        // x loses where `x lose b`, the bound where `x win b`; ties split.
        let tie = x.compare(b, CmpOp::Eq)?;
        let x_whole = and(&not(&x.compare(b, lose)?)?, &not(&tie)?)?;
        let b_whole = and(&not(&x.compare(b, win)?)?, &not(&tie)?)?;
        Ok([(x_whole, tie.clone()), (b_whole, tie)])
    };
    Ok(match bounds {
        Bounds::Min => one_bound(&saved_at(saved, 1)?.tensor(), CmpOp::Lt, CmpOp::Gt)?
            .into_iter()
            .collect(),
        Bounds::Max => one_bound(&saved_at(saved, 1)?.tensor(), CmpOp::Gt, CmpOp::Lt)?
            .into_iter()
            .collect(),
        Bounds::Both => {
            let (lo, hi) = (saved_at(saved, 1)?.tensor(), saved_at(saved, 2)?.tensor());
            let ordered = lo.compare(&hi, CmpOp::Lt)?;
            let tie_lo = and(&x.compare(&lo, CmpOp::Eq)?, &ordered)?;
            let tie_hi = and(&x.compare(&hi, CmpOp::Eq)?, &ordered)?;
            let tie_x = or(&tie_lo, &tie_hi)?;
            let outside = or(&x.compare(&lo, CmpOp::Lt)?, &x.compare(&hi, CmpOp::Gt)?)?;
            let x_whole = and(&not(&outside)?, &not(&tie_x)?)?;
            let lo_le_hi = lo.compare(&hi, CmpOp::Le)?;
            let lo_whole = and(&x.compare(&lo, CmpOp::Lt)?, &lo_le_hi)?;
            let hi_whole = or(
                &and(&x.compare(&hi, CmpOp::Gt)?, &lo_le_hi)?,
                &hi.compare(&lo, CmpOp::Lt)?,
            )?;
            smallvec![(x_whole, tie_x), (lo_whole, tie_lo), (hi_whole, tie_hi)]
        }
    })
}

/// PyTorch's lower-case name of a dtype in "expected dtype float for `end`".
fn c_type_name(dtype: DType) -> &'static str {
    dtype.cpp_type_name()
}

impl Tensor {
    /// `self + weight * (end - self)`, computed as PyTorch does (from `end` when
    /// `|weight| >= 0.5`, so that `weight == 1` gives `end` exactly). Float only; `end`
    /// (and a weight with dims) must have `self`'s dtype; a 0-d weight is converted to
    /// it. float16 / bfloat16 compute in float32 and round once.
    pub fn lerp(&self, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
        self.check_lerp(end, weight)?;
        self.lerp_op_math(end, &weight.to_dtype(self.dtype())?)
    }

    /// [`Tensor::lerp`] with a number weight, which PyTorch's kernel takes in the
    /// op-math type (float32 for float16 / bfloat16), not rounded to `self`'s dtype:
    /// `bfloat16([5.28125]).lerp(bfloat16([1]), 0.3337)` is 3.859375.
    pub fn lerp_number(&self, end: &Tensor, weight: f64) -> Result<Tensor> {
        let w = Tensor::scalar(weight, self.dtype().compute_dtype());
        self.check_lerp(end, &w)?;
        self.lerp_op_math(end, &w)
    }

    fn check_lerp(&self, end: &Tensor, weight: &Tensor) -> Result<()> {
        let scalar_weight = weight.dim() == 0;
        if !self.dtype().is_floating_point() {
            let name = if scalar_weight {
                "lerp_kernel_scalar"
            } else {
                "lerp_kernel_tensor"
            };
            return Err(Error::unsupported_dtype(name, self.dtype()));
        }
        for (what, t) in [("end", end), ("weight", weight)] {
            if t.dtype() != self.dtype() && !(what == "weight" && scalar_weight) {
                return Err(Error::dtype(
                    "lerp",
                    format!(
                        "expected dtype {} for `{what}` but got dtype {}",
                        c_type_name(self.dtype()),
                        c_type_name(t.dtype())
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The lerp formula on checked operands: in float32 for float16 / bfloat16 (the
    /// weight as given: already in `self`'s dtype or the op-math type), rounded once.
    fn lerp_op_math(&self, end: &Tensor, w: &Tensor) -> Result<Tensor> {
        if self.dtype().is_half() {
            let c = self.dtype().compute_dtype();
            let (a, e, w) = (self.to_dtype(c)?, end.to_dtype(c)?, w.to_dtype(c)?);
            return a.lerp_op_math(&e, &w)?.to_dtype(self.dtype());
        }
        let w = w.to_dtype(self.dtype())?;
        let diff = end.binary(self, BinaryOp::Sub)?;
        // |w| < 0.5 (as w * w < 0.25, exact at the boundary): self + w * diff; else
        // end - diff * (1 - w). A NaN weight takes the second form, as in PyTorch.
        let near_self = w
            .binary(&w, BinaryOp::Mul)?
            .compare(&Tensor::scalar(0.25, w.dtype()), CmpOp::Lt)?;
        let near = self.binary(&w.binary(&diff, BinaryOp::Mul)?, BinaryOp::Add)?;
        let one_minus = Tensor::scalar(1.0, w.dtype()).binary(&w, BinaryOp::Sub)?;
        let far = end.binary(&diff.binary(&one_minus, BinaryOp::Mul)?, BinaryOp::Sub)?;
        Tensor::where_cond(&near_self, &near, &far)
    }

    /// `self + value * t1 * t2` (`value` converted to the promoted dtype, as PyTorch
    /// does: an int64 addcmul with `value=0.5` adds nothing). Bool is refused.
    /// float16 / bfloat16 compute in float32 with `value` in float32 and round once.
    pub fn addcmul(&self, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<Tensor> {
        let dtype = promote3(self, t1, t2);
        if dtype == DType::Bool {
            return Err(Error::unsupported_dtype("addcmul_cpu_out", DType::Bool));
        }
        if dtype.is_half() {
            return op_math3(self, t1, t2, dtype, |a, b, c| a.addcmul(b, c, value));
        }
        let v = Tensor::from_scalar(value, dtype);
        let prod = v.binary(t1, BinaryOp::Mul)?.binary(t2, BinaryOp::Mul)?;
        self.binary(&prod, BinaryOp::Add)?.to_dtype(dtype)
    }

    /// `self + value * t1 / t2`; integer `t1` and `t2` are PyTorch's error. float16 /
    /// bfloat16 compute in float32 with `value` in float32 and round once.
    pub fn addcdiv(&self, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<Tensor> {
        if !t1.dtype().is_floating_point() && !t2.dtype().is_floating_point() {
            return Err(Error::InvalidArgument("Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.".into()));
        }
        let dtype = promote3(self, t1, t2);
        if dtype.is_half() {
            return op_math3(self, t1, t2, dtype, |a, b, c| a.addcdiv(b, c, value));
        }
        let v = Tensor::from_scalar(value, dtype);
        let quot = v.binary(t1, BinaryOp::Mul)?.binary(t2, BinaryOp::Div)?;
        self.binary(&quot, BinaryOp::Add)?.to_dtype(dtype)
    }

    /// Clamps into `[min, max]` with tensor bounds (broadcast; either may be absent):
    /// `minimum(maximum(self, min), max)`, so a NaN anywhere gives NaN and `min > max`
    /// gives `max`, as in PyTorch.
    pub fn clamp_tensor(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(Error::InvalidArgument(
                "torch.clamp: At least one of 'min' or 'max' must not be None".into(),
            ));
        }
        // One result dtype for all three, to which every operand is converted first
        // (`uint8.clamp(max=tensor(-1))` compares with 255, as PyTorch's TensorIterator).
        let operands: SmallVec<[(DType, crate::dtype::Tier); 3]> = [Some(self), min, max]
            .into_iter()
            .flatten()
            .map(|t| (t.dtype(), t.tier()))
            .collect();
        let mut out = self.to_dtype(DType::result_type_of(&operands))?;
        if let Some(lo) = min {
            out = out.math_binary(lo, MathBinaryOp::Maximum)?;
        }
        if let Some(hi) = max {
            out = out.math_binary(hi, MathBinaryOp::Minimum)?;
        }
        Ok(out)
    }
}

/// A fused op of three operands whose result dtype is float16 / bfloat16, as PyTorch's
/// kernels compute it: each operand cast to `dtype` and then to float32 (the op-math
/// type), `f` on those, the result rounded to `dtype` once.
fn op_math3(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    dtype: DType,
    f: impl FnOnce(&Tensor, &Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let compute = dtype.compute_dtype();
    let cast = |t: &Tensor| t.cast_operand(dtype, compute, false);
    f(&cast(a)?, &cast(b)?, &cast(c)?)?.to_dtype(dtype)
}

/// The result dtype of three operands (PyTorch's promotion, 0-d operands deciding only
/// across categories).
fn promote3(a: &Tensor, b: &Tensor, c: &Tensor) -> DType {
    DType::result_type_of(&[
        (a.dtype(), a.tier()),
        (b.dtype(), b.tier()),
        (c.dtype(), c.tier()),
    ])
}

impl Variable {
    /// `self + weight * (end - self)` for a number `weight` (LerpBackward0).
    pub fn lerp_scalar(&self, end: &Variable, weight: f64) -> Result<Variable> {
        let result = self.tensor().lerp_number(&end.tensor(), weight)?;
        Ok(Variable::record(result, &[self, end], |_, out| {
            let shapes = Shapes::of(&[self, end], out);
            (Rule::LerpScalar { shapes, weight }, smallvec![])
        }))
    }

    /// `self + weight * (end - self)` for a tensor `weight` (LerpBackward1).
    pub fn lerp(&self, end: &Variable, weight: &Variable) -> Result<Variable> {
        let result = self.tensor().lerp(&end.tensor(), &weight.tensor())?;
        Ok(Variable::record(result, &[self, end, weight], |_, out| {
            let shapes = Shapes::of(&[self, end, weight], out);
            (
                Rule::Lerp { shapes },
                smallvec![
                    Some(SavedTensor::input(self)),
                    Some(SavedTensor::input(end)),
                    Some(SavedTensor::input(weight))
                ],
            )
        }))
    }

    /// `self + value * t1 * t2`.
    pub fn addcmul(&self, t1: &Variable, t2: &Variable, value: Scalar) -> Result<Variable> {
        let result = self.tensor().addcmul(&t1.tensor(), &t2.tensor(), value)?;
        Ok(Variable::record(result, &[self, t1, t2], |needs, out| {
            let shapes = Shapes::of(&[self, t1, t2], out);
            (
                Rule::Addcmul {
                    shapes,
                    value: value.to_f64(),
                },
                smallvec![
                    needs[2].then(|| SavedTensor::input(t1)),
                    needs[1].then(|| SavedTensor::input(t2))
                ],
            )
        }))
    }

    /// `self + value * t1 / t2`.
    pub fn addcdiv(&self, t1: &Variable, t2: &Variable, value: Scalar) -> Result<Variable> {
        let result = self.tensor().addcdiv(&t1.tensor(), &t2.tensor(), value)?;
        Ok(Variable::record(result, &[self, t1, t2], |needs, out| {
            let shapes = Shapes::of(&[self, t1, t2], out);
            (
                Rule::Addcdiv {
                    shapes,
                    value: value.to_f64(),
                },
                smallvec![
                    needs[2].then(|| SavedTensor::input(t1)),
                    Some(SavedTensor::input(t2))
                ],
            )
        }))
    }

    /// Clamps into `[min, max]` with tensor bounds (ClampBackward0; the bounds get
    /// gradients, PyTorch's rule in `clamp_masks`).
    pub fn clamp_tensor(&self, min: Option<&Variable>, max: Option<&Variable>) -> Result<Variable> {
        let result = self.tensor().clamp_tensor(
            min.map(|m| m.tensor().clone()).as_ref(),
            max.map(|m| m.tensor().clone()).as_ref(),
        )?;
        let (inputs, bounds): (SmallVec<[&Variable; 3]>, Bounds) = match (min, max) {
            (Some(lo), Some(hi)) => (smallvec![self, lo, hi], Bounds::Both),
            (Some(lo), None) => (smallvec![self, lo], Bounds::Min),
            (None, Some(hi)) => (smallvec![self, hi], Bounds::Max),
            (None, None) => unreachable!("rustgrad internal error: clamp without bounds"),
        };
        Ok(Variable::record(result, &inputs, |_, out| {
            let shapes = Shapes::of(&inputs, out);
            let saved = inputs.iter().map(|v| Some(SavedTensor::input(v))).collect();
            (Rule::Clamp { shapes, bounds }, saved)
        }))
    }

    /// [`Variable::lerp_scalar`] in place.
    #[track_caller]
    pub fn lerp_scalar_(&self, end: &Variable, weight: f64) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.in_place(Some(end), site, |s| s.lerp_scalar(end, weight))
    }

    /// [`Variable::lerp`] in place.
    #[track_caller]
    pub fn lerp_(&self, end: &Variable, weight: &Variable) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.in_place_operands(&[end, weight], site, |s| s.lerp(end, weight))
    }

    /// [`Variable::addcmul`] in place.
    #[track_caller]
    pub fn addcmul_(&self, t1: &Variable, t2: &Variable, value: Scalar) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.in_place_operands(&[t1, t2], site, |s| s.addcmul(t1, t2, value))
    }

    /// [`Variable::addcdiv`] in place.
    #[track_caller]
    pub fn addcdiv_(&self, t1: &Variable, t2: &Variable, value: Scalar) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.in_place_operands(&[t1, t2], site, |s| s.addcdiv(t1, t2, value))
    }

    /// [`Variable::clamp_tensor`] in place.
    #[track_caller]
    pub fn clamp_tensor_(&self, min: Option<&Variable>, max: Option<&Variable>) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        let operands: SmallVec<[&Variable; 2]> = min.into_iter().chain(max).collect();
        self.in_place_operands(&operands, site, |s| s.clamp_tensor(min, max))
    }
}
