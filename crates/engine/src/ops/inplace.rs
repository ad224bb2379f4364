//! In-place ops (`add_`, `fill_`, `copy_`, ...) and the machinery that records them:
//! rebasing history, CopySlices for views, overlap checks. See Note [In-place ops].
//!
//! The forward of each op is a `Variable` method that computes through `Tensor` and
//! records a node holding this family's [`Rule`]; the rule's `apply` is its backward,
//! written with differentiable ops so that it serves double backward too.

use super::{shape_of, zeros_like, Grads, Shape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::WriteSite;
use crate::tensor::{BinaryOp, Scalar, Tensor};
use crate::variable::{Overlap, Variable};
use smallvec::smallvec;
use std::panic::Location;

/// The backward rules of this family. Saved tensors are kept beside the rule in the
/// node, in the order each variant documents.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// In-place `fill_` / `zero_`: the old values do not reach the output.
    Fill { zero: bool },
    /// In-place `copy_(src)`; `src` of shape and dtype given.
    Copy { src: Shape, src_dtype: DType },
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Fill { zero: false } => "FillBackward0",
            Rule::Fill { zero: true } => "ZeroBackward0",
            Rule::Copy { .. } => "CopyBackwards",
        }
    }

    /// The gradients of the inputs given `grad`, the gradient of the output; `needs[i]`
    /// says whether input `i` wants one.
    pub(crate) fn apply(
        &self,
        _saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let need = |i: usize| needs.get(i).copied().unwrap_or(false);
        let g = grad;
        Ok(match self {
            Rule::Fill { .. } => smallvec![Some(zeros_like(g)?)],
            Rule::Copy { src, src_dtype } => smallvec![
                if need(0) { Some(zeros_like(g)?) } else { None },
                if need(1) {
                    Some(g.sum_to_size(src)?.to_dtype(*src_dtype)?)
                } else {
                    None
                },
            ],
        })
    }
}

impl Variable {
    /// In-place `self += other`.
    #[track_caller]
    pub fn add_(&self, other: &Variable) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        crate::jit::op(
            || crate::jit::Op::InPlaceBinary(BinaryOp::Add),
            &[self, other],
            || self.in_place_binary(other, BinaryOp::Add, site, |s| s.add(other)),
        )
    }

    /// In-place `self -= other`.
    #[track_caller]
    pub fn sub_(&self, other: &Variable) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        crate::jit::op(
            || crate::jit::Op::InPlaceBinary(BinaryOp::Sub),
            &[self, other],
            || self.in_place_binary(other, BinaryOp::Sub, site, |s| s.sub(other)),
        )
    }

    /// In-place `self *= other`.
    #[track_caller]
    pub fn mul_(&self, other: &Variable) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        crate::jit::op(
            || crate::jit::Op::InPlaceBinary(BinaryOp::Mul),
            &[self, other],
            || self.in_place_binary(other, BinaryOp::Mul, site, |s| s.mul(other)),
        )
    }

    /// In-place `self /= other`.
    #[track_caller]
    pub fn div_(&self, other: &Variable) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        crate::jit::op(
            || crate::jit::Op::InPlaceBinary(BinaryOp::Div),
            &[self, other],
            || self.in_place_binary(other, BinaryOp::Div, site, |s| s.div(other)),
        )
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
        self.check_clamp_scalar_cast(&[min, max])?;
        self.in_place(None, WriteSite::Rust(Location::caller()), |s| {
            s.clamp_scalar(min, max)
        })
    }

    /// PyTorch's cast check of `clamp_` / `clamp_min_` / `clamp_max_` with number bounds,
    /// done before anything is computed: its message names the destination by its C++
    /// type ("result type Float can't be cast to the desired output type short int"),
    /// where the tensor-bound form and other in-place ops say "Short".
    pub(crate) fn check_clamp_scalar_cast(&self, bounds: &[Option<Scalar>]) -> Result<()> {
        let dtype = self.dtype();
        let result = bounds
            .iter()
            .flatten()
            .fold(dtype, |r, s| s.result_type_with(r));
        if !dtype.can_cast_from(result) {
            return Err(Error::CastError {
                from: result.scalar_type_name(),
                to: dtype.cpp_type_name(),
            });
        }
        Ok(())
    }

    /// In-place relu.
    #[track_caller]
    pub fn relu_(&self) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        crate::jit::op(
            || crate::jit::Op::ReluInPlace,
            &[self],
            || self.in_place(None, site, |s| s.relu()),
        )
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
        let site = WriteSite::Rust(Location::caller());
        crate::jit::op(
            || crate::jit::Op::ZeroInPlace,
            &[self],
            || self.fill_impl(Scalar::Int(0), true, site),
        )
    }

    fn fill_impl(&self, value: Scalar, zero: bool, site: WriteSite) -> Result<()> {
        self.in_place_impl(&[], Overlap::Idempotent, site, None, |s| {
            // A broadcast scalar: `copy_from` writes it without materialising it.
            let filled = Tensor::from_scalar(value, s.dtype()).broadcast_to(&s.shape())?;
            Ok(Variable::record(filled, &[s], |_, _| {
                (Rule::Fill { zero }, smallvec![])
            }))
        })
    }

    /// Copies `src` (broadcast, converted) into this variable.
    #[track_caller]
    pub fn copy_(&self, src: &Variable) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        crate::jit::op(
            || crate::jit::Op::CopyInPlace,
            &[self, src],
            || {
                let (src_shape, src_dtype) = (shape_of(src), src.dtype());
                let dtype = self.dtype();
                self.in_place(Some(src), site, |s| {
                    let values = src.tensor().broadcast_to(&s.shape()).map_err(|_| {
                        Error::ShapeMismatch {
                            op: "copy_",
                            message: format!(
                            "The size of tensor a ({:?}) must match the size of tensor b ({:?})",
                            s.shape(),
                            src.shape()
                        ),
                        }
                    })?;
                    // Not made contiguous: a broadcast scalar is written without materialising
                    // it (`Tensor::copy_from`).
                    let values = values.to_dtype(dtype)?;
                    Ok(Variable::record(values, &[s, src], |_, _| {
                        (
                            Rule::Copy {
                                src: src_shape,
                                src_dtype,
                            },
                            smallvec![],
                        )
                    }))
                })
            },
        )
    }
}
