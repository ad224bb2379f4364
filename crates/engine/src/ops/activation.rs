//! The activations of `nn.functional` that PyTorch records as dedicated nodes (`glu`,
//! `hardshrink`, `softshrink`, `threshold`, `prelu`, `rrelu`) and the composite
//! `tanhshrink`. Each dedicated op computes its forward with the engine's ops under
//! no-grad and records one node with PyTorch's grad_fn name; its [`Rule`] is the
//! analytic derivative written with differentiable ops (masks are constants), so double
//! backward works. See Note [Functional activations in Rust].

use super::{saved_at, Grads};
use crate::autograd::grad_mode::GradModeGuard;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::random::Generator;
use crate::shape;
use crate::tensor::Tensor;
use crate::variable::{SavedTensor, Variable};
use smallvec::smallvec;

/// The backward rules of this family.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// `glu` along `dim` (wrapped); saved `[input]`.
    Glu { dim: usize },
    /// `hardshrink` / `softshrink`: the gradient passes where `|x| > lambd`; saved
    /// `[input]`.
    Shrink { lambd: f64, soft: bool },
    /// `threshold`: the gradient passes where `x > threshold`; saved `[input]`.
    Threshold { threshold: f64 },
    /// `prelu` (PyTorch 2's `_prelu_kernel`); saved `[input, weight]` with the weight
    /// already shaped to broadcast against the input.
    Prelu,
    /// `rrelu_with_noise`: the output is `x * noise`; saved `[noise]`.
    RreluWithNoise,
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Glu { .. } => "GluBackward0",
            Rule::Shrink { soft: false, .. } => "HardshrinkBackward0",
            Rule::Shrink { soft: true, .. } => "SoftshrinkBackward0",
            Rule::Threshold { .. } => "ThresholdBackward0",
            Rule::Prelu => "PreluKernelBackward0",
            Rule::RreluWithNoise => "RreluWithNoiseBackward0",
        }
    }

    /// The gradients of the inputs given `grad`, the gradient of the output.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let x = saved_at(saved, 0)?;
        match *self {
            Rule::Glu { dim } => {
                let half = (x.shape()[dim] / 2) as i64;
                let d = dim as i64;
                let a = x.narrow(d, 0, half)?;
                let s = x.narrow(d, half, half)?.sigmoid()?;
                let grad_a = grad.mul(&s)?;
                let grad_b = grad.mul(&a)?.mul(&s)?.mul(&s.rsub_scalar(1.0)?)?;
                Ok(smallvec![Some(Variable::cat(&[grad_a, grad_b], d)?)])
            }
            Rule::Shrink { lambd, .. } => {
                let pass = mask(x, |v| v.is_nan() || v < -lambd || v > lambd)?;
                Ok(smallvec![Some(pass_or_zero(&pass, grad)?)])
            }
            Rule::Threshold { threshold } => {
                let pass = mask(x, |v| v > threshold || v.is_nan())?;
                Ok(smallvec![Some(pass_or_zero(&pass, grad)?)])
            }
            Rule::Prelu => {
                let w = saved_at(saved, 1)?;
                let positive = mask(x, |v| v > 0.0)?;
                let grad_x = needs
                    .first()
                    .copied()
                    .unwrap_or(false)
                    .then(|| Variable::where_cond(&positive, grad, &grad.mul(w)?))
                    .transpose()?;
                let grad_w = if needs.get(1).copied().unwrap_or(false) {
                    let zero = super::zero_like(grad);
                    let product = Variable::where_cond(&positive, &zero, &x.mul(grad)?)?;
                    Some(product.sum_to_size(&w.shape())?)
                } else {
                    None
                };
                Ok(smallvec![grad_x, grad_w])
            }
            Rule::RreluWithNoise => Ok(smallvec![Some(grad.mul(x)?)]),
        }
    }
}

/// A bool tensor of `x`'s shape: `keep(x[i])` elementwise (NaN compares as floats do).
fn mask(x: &Variable, keep: impl Fn(f64) -> bool) -> Result<Tensor> {
    let values = x.tensor().to_dtype(DType::F64)?.try_to_vec::<f64>()?;
    let flags: Vec<bool> = values.into_iter().map(keep).collect();
    Tensor::from_vec(flags, &x.shape())
}

/// `grad` where `pass`, else 0 (a `where`, so the result stays differentiable in `grad`).
fn pass_or_zero(pass: &Tensor, grad: &Variable) -> Result<Variable> {
    Variable::where_cond(pass, grad, &super::zero_like(grad))
}

/// PyTorch's "not implemented for" error of the activations' CPU kernels.
fn check_floating(x: &Variable, kernel: &'static str) -> Result<()> {
    if x.dtype().is_floating_point() {
        Ok(())
    } else {
        Err(Error::unsupported_dtype(kernel, x.dtype()))
    }
}

/// Records `result` (computed under no-grad) as one node over `inputs`, saving `saved`.
fn record_node(
    result: Variable,
    inputs: &[&Variable],
    rule: Rule,
    saved: &[&Variable],
) -> Variable {
    let result = result.tensor().clone();
    Variable::record(result, inputs, |_, _| {
        (
            rule,
            saved.iter().map(|v| Some(SavedTensor::input(v))).collect(),
        )
    })
}

impl Variable {
    /// `glu(input, dim)`: `a * sigmoid(b)` with `a`, `b` the halves of `self` along
    /// `dim` (grad_fn GluBackward0).
    pub fn glu(&self, dim: i64) -> Result<Variable> {
        if self.dim() == 0 {
            return Err(Error::InvalidArgument(
                "glu does not support scalars because halving size must be even".into(),
            ));
        }
        let d = shape::wrap_dim(dim, self.dim())?;
        let size = self.shape()[d];
        if !size.is_multiple_of(2) {
            return Err(Error::InvalidArgument(format!(
                "Halving dimension must be even, but dimension {d} is size {size}"
            )));
        }
        check_floating(self, "glu_cpu")?;
        let out = {
            let _no_grad = GradModeGuard::new(false);
            let half = (size / 2) as i64;
            let a = self.narrow(d as i64, 0, half)?;
            a.mul(&self.narrow(d as i64, half, half)?.sigmoid()?)?
        };
        Ok(record_node(out, &[self], Rule::Glu { dim: d }, &[self]))
    }

    /// `hardshrink(input, lambd)`: `x` where `|x| > lambd`, else 0.
    pub fn hardshrink(&self, lambd: f64) -> Result<Variable> {
        self.shrink(lambd, false)
    }

    /// `softshrink(input, lambd)`: `x - lambd` above `lambd`, `x + lambd` below
    /// `-lambd`, else 0; `lambd` must be non-negative.
    pub fn softshrink(&self, lambd: f64) -> Result<Variable> {
        check_floating(self, "softshrink_check")?;
        if lambd < 0.0 {
            let (max, name) = if self.dtype() == DType::F64 {
                ("1.79769e+308", "Double")
            } else {
                ("3.40282e+38", self.dtype().scalar_type_name())
            };
            return Err(Error::InvalidArgument(format!(
                "lambda must be in range [0, {max}] for input dtype {name}, but found {lambd}"
            )));
        }
        self.shrink(lambd, true)
    }

    fn shrink(&self, lambd: f64, soft: bool) -> Result<Variable> {
        check_floating(
            self,
            if soft {
                "softshrink_cpu"
            } else {
                "hardshrink_cpu"
            },
        )?;
        let out = {
            let _no_grad = GradModeGuard::new(false);
            let inside = mask(self, |v| v >= -lambd && v <= lambd)?;
            let zero = super::zero_like(self);
            if soft {
                // x - clamp(x, -lambd, lambd) is 0 inside, x -+ lambd outside.
                self.sub(&self.clamp(Some(-lambd), Some(lambd))?)?
            } else {
                Variable::where_cond(&inside, &zero, self)?
            }
        };
        Ok(record_node(
            out,
            &[self],
            Rule::Shrink { lambd, soft },
            &[self],
        ))
    }

    /// `tanhshrink(input)`: `x - tanh(x)` (a composite, as in PyTorch: SubBackward0).
    pub fn tanhshrink(&self) -> Result<Variable> {
        self.sub(&self.tanh()?)
    }

    /// `threshold(input, threshold, value)`: `x` where `x > threshold`, else `value`.
    pub fn threshold(&self, threshold: f64, value: f64) -> Result<Variable> {
        if self.dtype() == DType::Bool {
            return Err(Error::unsupported_dtype("threshold_cpu", self.dtype()));
        }
        let out = {
            let _no_grad = GradModeGuard::new(false);
            // PyTorch: `x <= threshold ? value : x`, so NaN is kept.
            let above = mask(self, |v| v > threshold || v.is_nan())?;
            let fill = Variable::from_tensor(Tensor::scalar(value, self.dtype()));
            Variable::where_cond(&above, self, &fill)?
        };
        Ok(record_node(
            out,
            &[self],
            Rule::Threshold { threshold },
            &[self],
        ))
    }

    /// `prelu(input, weight)`: `x` where `x > 0`, else `weight * x`, with one weight or
    /// one per channel (dim 1) (grad_fn PreluKernelBackward0).
    pub fn prelu(&self, weight: &Variable) -> Result<Variable> {
        let channels = if self.dim() >= 2 { self.shape()[1] } else { 1 };
        let count = weight.numel();
        if count != 1 && count != channels {
            return Err(Error::InvalidArgument(format!(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers = {count} and channel size = {channels}."
            )));
        }
        if weight.dim() > 1 {
            return Err(Error::InvalidArgument(format!(
                "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {}",
                weight.dim()
            )));
        }
        check_floating(self, "prelu_cpu")?;
        if weight.dtype() != self.dtype() {
            return Err(Error::InvalidArgument(format!(
                "prelu: Type promoting not supported. Got {} and {}",
                self.dtype().scalar_type_name(),
                weight.dtype().scalar_type_name()
            )));
        }
        // The weight shaped to broadcast: () for one weight, (C, 1, ...) per channel.
        let w = if count == 1 {
            weight.reshape(&[])?
        } else {
            let mut dims = vec![1i64; self.dim().max(2) - 1];
            dims[0] = channels as i64;
            weight.reshape(&dims)?
        };
        let out = {
            let _no_grad = GradModeGuard::new(false);
            let positive = mask(self, |v| v > 0.0)?;
            Variable::where_cond(&positive, self, &w.mul(self)?)?
        };
        Ok(record_node(out, &[self, &w], Rule::Prelu, &[self, &w]))
    }

    /// `rrelu(input, lower, upper, training)` (PyTorch's `rrelu_with_noise`): in
    /// training each non-positive element is multiplied by a slope drawn uniformly from
    /// `[lower, upper]` ([`crate::random::rrelu_noise`]: one double draw per such element,
    /// in row-major order, from `generator`); in evaluation by `(lower + upper) / 2`
    /// (PyTorch's `leaky_relu`). The product is computed in the op-math type (float32
    /// for the 16-bit floats) and rounded once; the noise saved for backward is the
    /// slope in the input's dtype. PyTorch has no float16 training kernel, nor do we.
    pub fn rrelu(
        &self,
        lower: f64,
        upper: f64,
        training: bool,
        generator: &Generator,
    ) -> Result<Variable> {
        if lower > upper {
            return Err(Error::InvalidArgument(
                "Lower bound should be less than or equal to the upper bound".into(),
            ));
        }
        let dtype = self.dtype();
        let input = self.tensor();
        let values = input.to_dtype(DType::F64)?.try_to_vec::<f64>()?;
        let slopes: Vec<f64> = if training {
            if !dtype.is_floating_point() || dtype == DType::F16 {
                return Err(Error::unsupported_dtype("rrelu_with_noise_out_cpu", dtype));
            }
            crate::random::rrelu_noise(&input, lower, upper, generator)?
        } else {
            check_floating(self, "leaky_relu_cpu")?;
            let slope = (lower + upper) / 2.0;
            let slope = if dtype == DType::F64 {
                slope
            } else {
                f64::from(slope as f32)
            };
            values
                .iter()
                .map(|&v| if v > 0.0 { 1.0 } else { slope })
                .collect()
        };
        let shape = self.shape();
        let out: Vec<f64> = values
            .iter()
            .zip(&slopes)
            .map(|(&x, &r)| {
                if dtype == DType::F64 {
                    x * r
                } else {
                    f64::from(x as f32 * r as f32)
                }
            })
            .collect();
        let out = Variable::from_tensor(Tensor::from_vec(out, &shape)?.to_dtype(dtype)?);
        let noise = Variable::from_tensor(Tensor::from_vec(slopes, &shape)?.to_dtype(dtype)?);
        Ok(record_node(out, &[self], Rule::RreluWithNoise, &[&noise]))
    }
}
