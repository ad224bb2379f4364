//! Dropout, feature (channel) dropout and alpha dropout: PyTorch's `_dropout_impl`, a
//! composite of a Bernoulli keep mask drawn from a generator and differentiable
//! products (grad_fn MulBackward0, AddBackward0 for the alpha forms), as in PyTorch.
//! See Note [Functional activations in Rust].

use crate::error::{Error, Result};
use crate::random::{bernoulli_like, bernoulli_scalar, Generator};
use crate::tensor::Tensor;
use crate::variable::Variable;

/// SELU's negative saturation value, `-scale * alpha` (PyTorch's alpha dropout constant).
const ALPHA: f64 = 1.758_099_340_847_376_6;

/// Which dropout `Variable::dropout` applies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DropoutKind {
    /// One mask value per channel (`(N, C, 1, ...)` mask) instead of per element.
    pub feature: bool,
    /// Alpha dropout: dropped values become SELU's saturation value, then `a x + b`
    /// restores the mean and variance.
    pub alpha: bool,
}

impl Variable {
    /// PyTorch's `_dropout_impl`: with probability `p` an element (or a whole channel
    /// for `kind.feature`) is dropped, the kept ones scaled by `1 / (1 - p)` (or the
    /// alpha transform); the mask is `bernoulli_(1 - p)` on `generator`. The identity
    /// when `!training`, `p == 0` or the input is empty. With `inplace` the result is
    /// written into `self` and `self` is returned.
    pub fn dropout(
        &self,
        p: f64,
        training: bool,
        kind: DropoutKind,
        inplace: bool,
        generator: &Generator,
    ) -> Result<Variable> {
        let default = std::ptr::eq(generator, &*crate::random::default_generator());
        let Some(scope) = crate::jit::Scope::enter() else {
            return self.dropout_impl(p, training, kind, inplace, generator);
        };
        if !default {
            drop(scope);
            crate::jit::unsupported("dropout with an explicit generator");
            return self.dropout_impl(p, training, kind, inplace, generator);
        }
        let out = self.dropout_impl(p, training, kind, inplace, generator)?;
        let op = || crate::jit::Op::Dropout {
            p,
            training,
            kind,
            inplace,
        };
        scope.finish(op, &[self], std::slice::from_ref(&out));
        Ok(out)
    }

    fn dropout_impl(
        &self,
        p: f64,
        training: bool,
        kind: DropoutKind,
        inplace: bool,
        generator: &Generator,
    ) -> Result<Variable> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::InvalidArgument(format!(
                "dropout probability has to be between 0 and 1, but got {p}"
            )));
        }
        if p == 0.0 || !training || self.numel() == 0 {
            return Ok(self.clone());
        }
        let apply = |factor: &Variable, shift: Option<&Variable>| -> Result<Variable> {
            if inplace {
                self.mul_(factor)?;
                if let Some(s) = shift {
                    self.add_(s)?;
                }
                Ok(self.clone())
            } else {
                let scaled = self.mul(factor)?;
                match shift {
                    Some(s) => scaled.add(s),
                    None => Ok(scaled),
                }
            }
        };
        if p == 1.0 {
            let zero = Variable::from_tensor(Tensor::scalar(0.0, self.dtype()));
            return apply(&zero, None);
        }
        let mask_shape: Vec<usize> = if kind.feature {
            if self.dim() < 2 {
                return Err(Error::InvalidArgument(
                    "Feature dropout requires at least 2 dimensions in the input".into(),
                ));
            }
            let shape = self.shape();
            let mut m = vec![1; self.dim()];
            m[..2].copy_from_slice(&shape[..2]);
            m
        } else {
            self.shape().to_vec()
        };
        if !self.dtype().is_floating_point() {
            // PyTorch scales its mask of the input's dtype in place (`div_(1 - p)`).
            return Err(Error::InvalidArgument(format!(
                "result type Float can't be cast to the desired output type {}",
                self.dtype().scalar_type_name()
            )));
        }
        // PyTorch's noise: `empty_like(input).bernoulli_(1 - p)` (so drawn in the input's
        // memory order when it is dense), or a new `(N, C, 1, ...)` tensor for the
        // feature forms; both through `bernoulli_`'s sampler.
        let keep = Variable::from_tensor(if kind.feature {
            bernoulli_scalar(&mask_shape, self.dtype(), 1.0 - p, generator)?
        } else {
            bernoulli_like(&self.tensor(), 1.0 - p, generator)?
        });
        if !kind.alpha {
            return apply(&keep.div_scalar(1.0 - p)?, None);
        }
        let a = 1.0 / ((ALPHA * ALPHA * p + 1.0) * (1.0 - p)).sqrt();
        let shift = keep
            .add_scalar(-1.0)?
            .mul_scalar(ALPHA * a)?
            .add_scalar(ALPHA * a * p)?;
        apply(&keep.mul_scalar(a)?, Some(&shift))
    }
}
