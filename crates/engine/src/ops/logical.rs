//! Elementwise predicates and logical / bitwise ops: `isnan`, `isinf`, `isfinite`,
//! `isposinf`, `isneginf`, `signbit`, `logical_and/or/xor/not`, `bitwise_and/or/xor/not`, and
//! `nan_to_num` (whose rule, NanToNumBackward0, is in `unary.rs`).
//!
//! Every op here but `nan_to_num` has a bool or integer result, which never carries
//! history (Note [Differentiable dtypes]): the `Variable` methods wrap the `Tensor`
//! result without recording.

use super::unary::Rule as UnaryRule;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::kernels::logical::{FloatClass, LogicalOp};
use crate::shape;
use crate::storage::WriteSite;
use crate::tensor::{check_allocation, CmpOp, Scalar, Tensor};
use crate::variable::SavedTensor;
use crate::variable::Variable;
use smallvec::smallvec;
use std::panic::Location;

impl Tensor {
    /// Whether each element is of `class`; integers and bools are all finite.
    pub fn is_class(&self, class: FloatClass) -> Result<Tensor> {
        check_allocation(self.numel(), DType::Bool)?;
        let test = move |x: f64| class.test(x);
        let v: Vec<bool> = match self.dtype() {
            DType::F32 => {
                self.read(|s: &[f32]| elementwise::map1(s, self.layout(), |x| test(x as f64)))?
            }
            DType::F64 => self.read(|s: &[f64]| elementwise::map1(s, self.layout(), test))?,
            DType::F16 | DType::BF16 => return self.via_f32(|t| t.is_class(class)),
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => {
                return Tensor::full(
                    self.shape(),
                    f64::from(u8::from(class.of_integers())),
                    DType::Bool,
                );
            }
        };
        Ok(Tensor::from_buffer(
            <bool as Element>::into_buffer(v),
            self.shape(),
        ))
    }

    /// `signbit`: true where the sign bit is set (-0.0 and negative NaN included;
    /// negative integers; never for bool).
    pub fn signbit(&self) -> Result<Tensor> {
        check_allocation(self.numel(), DType::Bool)?;
        let v: Vec<bool> = match self.dtype() {
            DType::F32 => self.read(|s: &[f32]| {
                elementwise::map1(s, self.layout(), |x: f32| x.is_sign_negative())
            })?,
            DType::F64 => self.read(|s: &[f64]| {
                elementwise::map1(s, self.layout(), |x: f64| x.is_sign_negative())
            })?,
            DType::F16 | DType::BF16 => return self.via_f32(|t| t.signbit()),
            DType::I64 | DType::I32 | DType::I16 | DType::I8 => {
                let ints = self.to_dtype(DType::I64)?;
                ints.read(|s: &[i64]| elementwise::map1(s, ints.layout(), |x| x < 0))?
            }
            DType::U8 | DType::Bool => return Tensor::full(self.shape(), 0.0, DType::Bool),
        };
        Ok(Tensor::from_buffer(
            <bool as Element>::into_buffer(v),
            self.shape(),
        ))
    }

    /// Each element's truth value (nonzero; NaN is true), as bool.
    fn truth(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Ok(self.clone());
        }
        self.compare(&Tensor::scalar(0.0, self.dtype()), CmpOp::Ne)
    }

    /// `logical_and` / `logical_or` / `logical_xor` of the truth values, broadcast; the
    /// result is bool for every dtype.
    pub fn logical(&self, other: &Tensor, op: LogicalOp) -> Result<Tensor> {
        let out_shape = shape::broadcast_shapes(self.shape(), other.shape())?;
        check_allocation(shape::checked_numel(&out_shape)?, DType::Bool)?;
        let (a, b) = (self.truth()?, other.truth()?);
        let (la, lb) = (
            a.layout().broadcast_to(&out_shape)?,
            b.layout().broadcast_to(&out_shape)?,
        );
        let v = a.read2(&b, |sa: &[bool], sb: &[bool]| {
            elementwise::map2(sa, &la, sb, &lb, |x, y| op.apply_bool(x, y))
        })?;
        Ok(Tensor::from_buffer(
            <bool as Element>::into_buffer(v),
            &out_shape,
        ))
    }

    /// `logical_not`: true where the element is zero (bool result).
    pub fn logical_not(&self) -> Result<Tensor> {
        let zero = if self.dtype() == DType::Bool {
            Tensor::from_scalar(Scalar::Bool(false), DType::Bool)
        } else {
            Tensor::scalar(0.0, self.dtype())
        };
        self.compare(&zero, CmpOp::Eq)
    }

    /// `bitwise_and` / `or` / `xor`, broadcast, with PyTorch's promotion: bool with
    /// bool stays bool, with int64 gives int64; floating dtypes have no kernel.
    pub fn bitwise(&self, other: &Tensor, op: LogicalOp) -> Result<Tensor> {
        let out_shape = shape::broadcast_shapes(self.shape(), other.shape())?;
        let dtype = Tensor::result_type(self, other);
        if dtype.is_floating_point() {
            return Err(Error::unsupported_dtype(op.bitwise_kernel_name(), dtype));
        }
        check_allocation(shape::checked_numel(&out_shape)?, dtype)?;
        let (a, b) = (self.to_dtype(dtype)?, other.to_dtype(dtype)?);
        let (la, lb) = (
            a.layout().broadcast_to(&out_shape)?,
            b.layout().broadcast_to(&out_shape)?,
        );
        if dtype == DType::Bool {
            let v = a.read2(&b, |sa: &[bool], sb: &[bool]| {
                elementwise::map2(sa, &la, sb, &lb, |x, y| op.apply_bool(x, y))
            })?;
            return Ok(Tensor::from_buffer(
                <bool as Element>::into_buffer(v),
                &out_shape,
            ));
        }
        // Narrower integers compute on their sign-extended int64 values: and / or / xor
        // of the low bits are the low bits of the int64 results.
        let (a, b) = (a.to_dtype(DType::I64)?, b.to_dtype(DType::I64)?);
        let v = a.read2(&b, |sa: &[i64], sb: &[i64]| {
            elementwise::map2(sa, &la, sb, &lb, |x, y| op.apply_i64(x, y))
        })?;
        Tensor::from_buffer(<i64 as Element>::into_buffer(v), &out_shape).to_dtype(dtype)
    }

    /// `bitwise_not`: `!x` of int64, `not x` of bool; floating dtypes have no kernel.
    pub fn bitwise_not(&self) -> Result<Tensor> {
        check_allocation(self.numel(), self.dtype())?;
        let buffer = match self.dtype() {
            DType::Bool => <bool as Element>::into_buffer(
                self.read(|s: &[bool]| elementwise::map1(s, self.layout(), |x| !x))?,
            ),
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 => {
                let ints = self.to_dtype(DType::I64)?;
                let v = ints.read(|s: &[i64]| elementwise::map1(s, ints.layout(), |x| !x))?;
                return Tensor::from_buffer(<i64 as Element>::into_buffer(v), self.shape())
                    .to_dtype(self.dtype());
            }
            d @ (DType::F32 | DType::F64 | DType::F16 | DType::BF16) => {
                return Err(Error::unsupported_dtype("bitwise_not_cpu", d))
            }
        };
        Ok(Tensor::from_buffer(buffer, self.shape()))
    }

    /// `nan_to_num`: NaN becomes `nan` (default 0), +inf `posinf` and -inf `neginf`
    /// (default the dtype's largest / lowest finite value), each converted to the
    /// dtype (so an out-of-range replacement is infinite again, as in PyTorch).
    /// Integer and bool tensors are copied unchanged.
    pub fn nan_to_num(
        &self,
        nan: Option<f64>,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> Result<Tensor> {
        check_allocation(self.numel(), self.dtype())?;
        let nan = nan.unwrap_or(0.0);
        let buffer = match self.dtype() {
            DType::F32 => {
                let (n, p, m) = (
                    nan as f32,
                    posinf.map_or(f32::MAX, |v| v as f32),
                    neginf.map_or(f32::MIN, |v| v as f32),
                );
                <f32 as Element>::into_buffer(self.read(|s: &[f32]| {
                    elementwise::map1(s, self.layout(), |x| {
                        replace(x, [n, p, m], [f32::INFINITY, f32::NEG_INFINITY])
                    })
                })?)
            }
            DType::F64 => {
                let (p, m) = (posinf.unwrap_or(f64::MAX), neginf.unwrap_or(f64::MIN));
                <f64 as Element>::into_buffer(self.read(|s: &[f64]| {
                    elementwise::map1(s, self.layout(), |x| {
                        replace(x, [nan, p, m], [f64::INFINITY, f64::NEG_INFINITY])
                    })
                })?)
            }
            DType::F16 | DType::BF16 => {
                // The defaults are this dtype's extremes, not float32's.
                let max = if self.dtype() == DType::F16 {
                    crate::dtype::f16::MAX.to_f64()
                } else {
                    crate::dtype::bf16::MAX.to_f64()
                };
                let (p, m) = (posinf.unwrap_or(max), neginf.unwrap_or(-max));
                return self.via_f32(|t| t.nan_to_num(Some(nan), Some(p), Some(m)));
            }
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => {
                return self.deep_clone()
            }
        };
        Ok(Tensor::from_buffer(buffer, self.shape()))
    }
}

/// `x` with NaN, +inf and -inf (`infs`, of `x`'s type) replaced by `by`.
// `x != x` only for NaN.
#[allow(clippy::eq_op)]
fn replace<T: Copy + PartialEq>(x: T, by: [T; 3], infs: [T; 2]) -> T {
    if x != x {
        by[0]
    } else if x == infs[0] {
        by[1]
    } else if x == infs[1] {
        by[2]
    } else {
        x
    }
}

impl Variable {
    /// Whether each element is of `class` (`isnan`, `isinf`, ...); bool, no history.
    pub fn is_class(&self, class: FloatClass) -> Result<Variable> {
        Ok(Variable::from_tensor(self.tensor().is_class(class)?))
    }

    /// `signbit` (bool, no history).
    pub fn signbit(&self) -> Result<Variable> {
        Ok(Variable::from_tensor(self.tensor().signbit()?))
    }

    /// `logical_and` / `or` / `xor` (bool, no history).
    pub fn logical(&self, other: &Variable, op: LogicalOp) -> Result<Variable> {
        Ok(Variable::from_tensor(
            self.tensor().logical(&other.tensor(), op)?,
        ))
    }

    /// `logical_not` (bool, no history).
    pub fn logical_not(&self) -> Result<Variable> {
        Ok(Variable::from_tensor(self.tensor().logical_not()?))
    }

    /// `bitwise_and` / `or` / `xor` (bool or int64, no history).
    pub fn bitwise(&self, other: &Variable, op: LogicalOp) -> Result<Variable> {
        Ok(Variable::from_tensor(
            self.tensor().bitwise(&other.tensor(), op)?,
        ))
    }

    /// `bitwise_not` (bool or int64, no history).
    pub fn bitwise_not(&self) -> Result<Variable> {
        Ok(Variable::from_tensor(self.tensor().bitwise_not()?))
    }

    /// `nan_to_num` (NanToNumBackward0: the gradient passes where `self` is finite).
    pub fn nan_to_num(
        &self,
        nan: Option<f64>,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> Result<Variable> {
        let result = self.tensor().nan_to_num(nan, posinf, neginf)?;
        Ok(Variable::record(result, &[self], |_, _| {
            (
                UnaryRule::NanToNum,
                smallvec![Some(SavedTensor::input(self))],
            )
        }))
    }

    /// `logical_*_` in place: the truth values written in `self`'s dtype (0 / 1); a
    /// float `self` gets a zero gradient for its old values (CopyBackwards).
    #[track_caller]
    pub fn logical_(&self, other: &Variable, op: LogicalOp) -> Result<()> {
        self.copy_(&self.logical(other, op)?)
    }

    /// `logical_not_` in place (see [`Variable::logical_`]).
    #[track_caller]
    pub fn logical_not_(&self) -> Result<()> {
        self.copy_(&self.logical_not()?)
    }

    /// `bitwise_*_` in place; the result must fit `self`'s dtype (bool |= int fails).
    #[track_caller]
    pub fn bitwise_(&self, other: &Variable, op: LogicalOp) -> Result<()> {
        self.check_in_place_cast(Tensor::result_type(&self.tensor(), &other.tensor()))?;
        let site = WriteSite::Rust(Location::caller());
        self.in_place(Some(other), site, |s| s.bitwise(other, op))
    }

    /// `bitwise_not_` in place.
    #[track_caller]
    pub fn bitwise_not_(&self) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.in_place(None, site, |s| s.bitwise_not())
    }

    /// `nan_to_num_` in place.
    #[track_caller]
    pub fn nan_to_num_(
        &self,
        nan: Option<f64>,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> Result<()> {
        let site = WriteSite::Rust(Location::caller());
        self.in_place(None, site, |s| s.nan_to_num(nan, posinf, neginf))
    }
}
