//! Normalisation: `batch_norm` (training and evaluation, with the running statistics
//! updated in place), `layer_norm` and `group_norm`. One kernel family
//! (`kernels/norm.rs`) serves all three: each sees its input as `[outer][groups][inner]`
//! with per-group statistics and an affine weight indexed by position.
//!
//! The backward is one fused kernel when the gradient is not itself recorded; under
//! `create_graph` the same formula is written with differentiable ops, so double
//! backward works. See Note [Pooling and normalisation].

use super::pool::dispatch_float;
use super::pool::with_slice;
use super::{saved_at, Grads};
use crate::autograd::grad_mode;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::norm::{self as kernel, NormGeom};
use crate::shape::Dims;
use crate::storage::WriteSite;
use crate::tensor::Tensor;
use crate::variable::{SavedTensor, Variable};
use smallvec::smallvec;
use std::panic::Location;

/// Which normalisation a [`Rule::Norm`] is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Batch,
    Layer,
    Group,
}

/// What the backward of a normalisation needs (boxed in the rule).
#[derive(Clone, Debug)]
pub(crate) struct NormInfo {
    kind: Kind,
    geom: NormGeom,
    /// Whether the statistics were computed from the input (training, layer and group
    /// norm) rather than given (batch norm in evaluation).
    batch_stats: bool,
    has_weight: bool,
    has_bias: bool,
    /// The weight's shape broadcast against the input (`[1, C, 1, ...]` or the
    /// normalized shape), for the differentiable formulation.
    wshape: Dims,
    /// The forward's epsilon (the composed backward recomputes the statistics).
    eps: f64,
}

/// The backward rules of this family.
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// A normalisation; inputs `[input, weight?, bias?]` (those given); saved `[input,
    /// weight (or none), mean, invstd]`, the statistics as float64 `[groups]`.
    Norm(Box<NormInfo>),
}

impl Rule {
    /// PyTorch's grad_fn class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Rule::Norm(info) => match info.kind {
                Kind::Batch => "NativeBatchNormBackward0",
                Kind::Layer => "NativeLayerNormBackward0",
                Kind::Group => "NativeGroupNormBackward0",
            },
        }
    }

    /// The gradients of `[input, weight?, bias?]` given the output's gradient.
    pub(crate) fn apply(
        &self,
        saved: &[Option<Variable>],
        grad: &Variable,
        needs: &[bool],
    ) -> Result<Grads> {
        let Rule::Norm(info) = self;
        let x = saved_at(saved, 0)?;
        let weight = saved.get(1).cloned().flatten();
        let mean = saved_at(saved, 2)?;
        let invstd = saved_at(saved, 3)?;
        let mut slots = vec![0usize];
        if info.has_weight {
            slots.push(1);
        }
        if info.has_bias {
            slots.push(2);
        }
        let mut want = [false; 3];
        for (&slot, &need) in slots.iter().zip(needs) {
            want[slot] = need;
        }
        let (dx, dw, db) = if grad_mode::is_grad_enabled() {
            composed_backward(info, x, weight.as_ref(), mean, invstd, grad, want)?
        } else {
            fused_backward(info, x, weight.as_ref(), mean, invstd, grad, want)?
        };
        let all = [dx, dw, db];
        Ok(slots.iter().map(|&s| all[s].clone()).collect())
    }
}

type Three = (Option<Variable>, Option<Variable>, Option<Variable>);

/// The backward in one kernel (no graph recorded).
fn fused_backward(
    info: &NormInfo,
    x: &Variable,
    weight: Option<&Variable>,
    mean: &Variable,
    invstd: &Variable,
    grad: &Variable,
    want: [bool; 3],
) -> Result<Three> {
    let shape = x.shape();
    let dtype = x.dtype();
    let wshape = weight.map(|w| w.shape());
    if x.numel() == 0 {
        // No elements: zero gradients (the kernels' geometry needs a non-empty input).
        let zeros = |want: bool, s: &[usize]| -> Result<Option<Variable>> {
            Ok(match want {
                true => Some(Variable::from_tensor(Tensor::zeros(s, dtype)?)),
                false => None,
            })
        };
        let ws = wshape.unwrap_or_else(|| Dims::from_slice(&[info.geom.weights()]));
        return Ok((
            zeros(want[0], &shape)?,
            zeros(want[1], &ws)?,
            zeros(want[2], &ws)?,
        ));
    }
    let mean: Vec<f64> = mean.tensor().try_to_vec()?;
    let invstd: Vec<f64> = invstd.tensor().try_to_vec()?;
    let grad = grad.tensor().to_dtype(dtype)?;
    dispatch_float!(dtype, "native_batch_norm_backward", T => {
        let wv: Option<Vec<T>> = match weight {
            Some(w) => Some(w.tensor().try_to_vec()?),
            None => None,
        };
        let (dx, dw, db) = with_slice(&x.tensor(), |xs: &[T]| {
            with_slice(&grad, |gs: &[T]| {
                kernel::normalize_backward(xs, gs, &info.geom, &mean, &invstd, wv.as_deref(), info.batch_stats, want)
            })
        })?;
        let wrap = |v: Option<Vec<T>>, s: &[usize]| -> Result<Option<Variable>> {
            v.map(|v| Ok(Variable::from_tensor(Tensor::from_vec(v, s)?))).transpose()
        };
        let ws = wshape.clone().unwrap_or_else(|| {
            Dims::from_slice(&[info.geom.weights()])
        });
        Ok((wrap(dx, &shape)?, wrap(dw, &ws)?, wrap(db, &ws)?))
    })
}

/// The backward written with differentiable ops (for `create_graph`): the statistics
/// are recomputed from the saved input, so gradients flow through them too.
fn composed_backward(
    info: &NormInfo,
    x: &Variable,
    weight: Option<&Variable>,
    mean: &Variable,
    invstd: &Variable,
    grad: &Variable,
    want: [bool; 3],
) -> Result<Three> {
    let g = &info.geom;
    let shape: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
    let three = [g.outer as i64, g.groups as i64, g.inner as i64];
    let x3 = x.reshape(&three)?;
    let (mean, invstd) = if info.batch_stats {
        let mean = x3.mean_dims(&[0, 2], true)?;
        let centred = x3.sub(&mean)?;
        let var = centred.mul(&centred)?.mean_dims(&[0, 2], true)?;
        (mean, var.add_scalar(info.eps)?.rsqrt()?)
    } else {
        let as_input = |v: &Variable| -> Result<Variable> {
            v.detach()
                .to_dtype(x.dtype())?
                .reshape(&[1, g.groups as i64, 1])
        };
        (as_input(mean)?, as_input(invstd)?)
    };
    let xhat = x3.sub(&mean)?.mul(&invstd)?;
    let g3 = grad.reshape(&three)?;
    let w3 = match weight {
        Some(w) => Some(
            w.reshape(&super::ints(&info.wshape))?
                .expand(&shape)?
                .reshape(&three)?,
        ),
        None => None,
    };
    let dx = if want[0] {
        let dxhat = match &w3 {
            Some(w) => g3.mul(w)?,
            None => g3.clone(),
        };
        let dx = if info.batch_stats {
            let m1 = dxhat.mean_dims(&[0, 2], true)?;
            let m2 = dxhat.mul(&xhat)?.mean_dims(&[0, 2], true)?;
            dxhat.sub(&m1)?.sub(&xhat.mul(&m2)?)?.mul(&invstd)?
        } else {
            dxhat.mul(&invstd)?
        };
        Some(dx.reshape(&shape)?)
    } else {
        None
    };
    let wdims: Vec<i64> = match weight {
        Some(w) => super::ints(&w.shape()),
        None => vec![g.weights() as i64],
    };
    let dw = if want[1] {
        Some(
            g3.mul(&xhat)?
                .reshape(&shape)?
                .sum_to_size(&info.wshape)?
                .reshape(&wdims)?,
        )
    } else {
        None
    };
    let db = if want[2] {
        Some(grad.sum_to_size(&info.wshape)?.reshape(&wdims)?)
    } else {
        None
    };
    Ok((dx, dw, db))
}

/// Checks an affine parameter or running statistic: `numel` elements and `dtype`.
fn check_param(name: &str, v: Option<&Variable>, numel: usize, dtype: DType) -> Result<()> {
    if let Some(v) = v {
        if v.numel() != numel {
            return Err(Error::InvalidArgument(format!(
                "{name} should contain {numel} elements not {}",
                v.numel()
            )));
        }
        if v.dtype() != dtype {
            return Err(Error::InvalidArgument(
                "mixed dtype (CPU): all inputs must share same datatype.".into(),
            ));
        }
    }
    Ok(())
}

impl Variable {
    /// `batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
    /// eps)` over `(N, C, *)`: normalises each channel by the batch's statistics
    /// (`training`, updating the running statistics in place with `momentum`, the
    /// variance unbiased) or by the running ones, then scales and shifts.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_norm(
        &self,
        running_mean: Option<&Variable>,
        running_var: Option<&Variable>,
        weight: Option<&Variable>,
        bias: Option<&Variable>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<Variable> {
        crate::jit::op_opt(
            || crate::jit::Op::BatchNorm {
                present: [
                    running_mean.is_some(),
                    running_var.is_some(),
                    weight.is_some(),
                    bias.is_some(),
                ],
                training,
                momentum,
                eps,
            },
            &[self],
            &[running_mean, running_var, weight, bias],
            || {
                let shape = self.shape();
                let channels = if shape.len() >= 2 { shape[1] } else { 0 };
                let dtype = self.dtype();
                check_param("weight", weight, channels, dtype)?;
                check_param("bias", bias, channels, dtype)?;
                check_param("running_mean", running_mean, channels, dtype)?;
                check_param("running_var", running_var, channels, dtype)?;
                if !training && (running_mean.is_none() || running_var.is_none()) {
                    return Err(Error::InvalidArgument(
                        "running_mean must be defined in evaluation mode".into(),
                    ));
                }
                if !dtype.is_floating_point() || shape.len() < 2 {
                    return Err(Error::unsupported_dtype("batch_norm", dtype));
                }
                let inner: usize = shape[2..].iter().product();
                let geom = NormGeom {
                    outer: shape[0],
                    groups: channels,
                    inner,
                    wmod: channels.max(1),
                    wdiv: inner.max(1),
                };
                let mut wshape: Dims = Dims::from_elem(1, shape.len());
                wshape[1] = channels;
                let given = if training {
                    None
                } else {
                    let (Some(rm), Some(rv)) = (running_mean, running_var) else {
                        return Err(Error::InvalidArgument(
                            "running_mean must be defined in evaluation mode".into(),
                        ));
                    };
                    let mean: Vec<f64> = rm.tensor().try_to_vec()?;
                    let var: Vec<f64> = rv.tensor().try_to_vec()?;
                    Some((mean, var))
                };
                let (out, mean, var) =
                    self.normalise(Kind::Batch, geom.clone(), given, weight, bias, eps, wshape)?;
                if training && geom.count() > 0 {
                    if let (Some(rm), Some(rv)) = (running_mean, running_var) {
                        let n = geom.count() as f64;
                        let unbias = if n > 1.0 {
                            n / (n - 1.0)
                        } else {
                            f64::INFINITY
                        };
                        let old_m: Vec<f64> = rm.tensor().try_to_vec()?;
                        let old_v: Vec<f64> = rv.tensor().try_to_vec()?;
                        let new_m: Vec<f64> = old_m
                            .iter()
                            .zip(&mean)
                            .map(|(o, m)| (1.0 - momentum) * o + momentum * m)
                            .collect();
                        let new_v: Vec<f64> = old_v
                            .iter()
                            .zip(&var)
                            .map(|(o, v)| (1.0 - momentum) * o + momentum * v * unbias)
                            .collect();
                        let site = || WriteSite::Rust(Location::caller());
                        rm.tensor().copy_from(
                            &Tensor::from_vec(new_m, &rm.shape())?.to_dtype(dtype)?,
                            site(),
                        )?;
                        rv.tensor().copy_from(
                            &Tensor::from_vec(new_v, &rv.shape())?.to_dtype(dtype)?,
                            site(),
                        )?;
                    }
                }
                Ok(out)
            },
        )
    }

    /// `layer_norm(input, normalized_shape, weight, bias, eps)`: normalises over the last
    /// `len(normalized_shape)` dims, which must equal `normalized_shape`.
    pub fn layer_norm(
        &self,
        normalized_shape: &[i64],
        weight: Option<&Variable>,
        bias: Option<&Variable>,
        eps: f64,
    ) -> Result<Variable> {
        crate::jit::op_opt(
            || crate::jit::Op::LayerNorm {
                shape: normalized_shape.into(),
                has_weight: weight.is_some(),
                has_bias: bias.is_some(),
                eps,
            },
            &[self],
            &[weight, bias],
            || {
                let shape = self.shape();
                let k = normalized_shape.len();
                if k == 0 {
                    return Err(Error::InvalidArgument(
                "Expected normalized_shape to be at least 1-dimensional, i.e., containing at \
                 least one element, but got normalized_shape = []"
                    .into(),
            ));
                }
                let fits = k >= 1
                    && shape.len() >= k
                    && shape[shape.len() - k..]
                        .iter()
                        .zip(normalized_shape)
                        .all(|(&s, &n)| s as i64 == n);
                if !fits {
                    return Err(Error::InvalidArgument(format!(
                "Given normalized_shape={normalized_shape:?}, expected input with shape [*{}], \
                 but got input of size{shape:?}",
                normalized_shape
                    .iter()
                    .map(|d| format!(", {d}"))
                    .collect::<String>()
            )));
                }
                for (name, p) in [("weight", weight), ("bias", bias)] {
                    if let Some(p) = p {
                        if super::ints(&p.shape()) != normalized_shape {
                            return Err(Error::InvalidArgument(format!(
                                "Expected {name} to be of same shape as normalized_shape, but got \
                         {name} of shape {:?} and normalized_shape = {normalized_shape:?}",
                                p.shape()
                            )));
                        }
                        if p.dtype() != self.dtype() {
                            return Err(Error::InvalidArgument(
                                "mixed dtype (CPU): all inputs must share same datatype.".into(),
                            ));
                        }
                    }
                }
                if !self.dtype().is_floating_point() {
                    return Err(Error::unsupported_dtype(
                        "LayerNormKernelImpl",
                        self.dtype(),
                    ));
                }
                let inner: usize = shape[shape.len() - k..].iter().product();
                let rows: usize = shape[..shape.len() - k].iter().product();
                let geom = NormGeom {
                    outer: 1,
                    groups: rows,
                    inner,
                    wmod: 1,
                    wdiv: 1,
                };
                let wshape: Dims = shape[shape.len() - k..].into();
                Ok(self
                    .normalise(Kind::Layer, geom, None, weight, bias, eps, wshape)?
                    .0)
            },
        )
    }

    /// `group_norm(input, num_groups, weight, bias, eps)` over `(N, C, *)`: the channels
    /// split into `num_groups` groups, each normalised per sample.
    pub fn group_norm(
        &self,
        num_groups: i64,
        weight: Option<&Variable>,
        bias: Option<&Variable>,
        eps: f64,
    ) -> Result<Variable> {
        let shape = self.shape();
        if shape.len() < 2 {
            return Err(Error::InvalidArgument(format!(
                "Expected at least 2 dimensions for input tensor but received {}",
                shape.len()
            )));
        }
        let (n, c) = (shape[0], shape[1]);
        if num_groups <= 0 || c as i64 % num_groups != 0 {
            return Err(Error::InvalidArgument(format!(
                "Expected number of channels in input to be divisible by num_groups, but got \
                 input of shape {shape:?} and num_groups={num_groups}"
            )));
        }
        for (name, p) in [("weight", weight), ("bias", bias)] {
            if let Some(p) = p {
                if p.dim() != 1 || p.numel() != c {
                    return Err(Error::InvalidArgument(format!(
                        "Expected {name} to be a vector of size equal to the number of channels \
                         in input, but got {name} of shape {:?} and input of shape {shape:?}",
                        p.shape()
                    )));
                }
                if p.dtype() != self.dtype() {
                    return Err(Error::InvalidArgument(
                        "mixed dtype (CPU): all inputs must share same datatype.".into(),
                    ));
                }
            }
        }
        if !self.dtype().is_floating_point() {
            return Err(Error::unsupported_dtype(
                "GroupNormKernelImpl",
                self.dtype(),
            ));
        }
        let g = num_groups as usize;
        let hw: usize = shape[2..].iter().product();
        let geom = NormGeom {
            outer: 1,
            groups: n * g,
            inner: c / g * hw,
            wmod: g,
            wdiv: hw.max(1),
        };
        let mut wshape: Dims = Dims::from_elem(1, shape.len());
        wshape[1] = c;
        Ok(self
            .normalise(Kind::Group, geom, None, weight, bias, eps, wshape)?
            .0)
    }

    /// The shared forward: statistics (computed, or `given` as `(mean, var)`), the
    /// normalised output recorded with [`Rule::Norm`], and the `(mean, biased var)` per
    /// group.
    #[allow(clippy::too_many_arguments)]
    fn normalise(
        &self,
        kind: Kind,
        geom: NormGeom,
        given: Option<(Vec<f64>, Vec<f64>)>,
        weight: Option<&Variable>,
        bias: Option<&Variable>,
        eps: f64,
        wshape: Dims,
    ) -> Result<(Variable, Vec<f64>, Vec<f64>)> {
        let dtype = self.dtype();
        let shape = self.shape();
        let batch_stats = given.is_none();
        let (result, mean, var, invstd) = dispatch_float!(dtype, "native_norm", T => {
            let wv: Option<Vec<T>> = match weight {
                Some(w) => Some(w.tensor().try_to_vec()?),
                None => None,
            };
            let bv: Option<Vec<T>> = match bias {
                Some(b) => Some(b.tensor().try_to_vec()?),
                None => None,
            };
            if self.numel() == 0 {
                let g = geom.groups;
                (Tensor::zeros(&shape, dtype)?, vec![f64::NAN; g], vec![f64::NAN; g], vec![f64::NAN; g])
            } else {
                with_slice(&self.tensor(), |x: &[T]| {
                    let (mean, var): (Vec<f64>, Vec<f64>) = match &given {
                        Some((m, v)) => (m.clone(), v.clone()),
                        None => kernel::moments(x, &geom)?.into_iter().unzip(),
                    };
                    let invstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
                    let y = kernel::normalize(x, &geom, &mean, &invstd, wv.as_deref(), bv.as_deref())?;
                    Ok((Tensor::from_vec(y, &shape)?, mean, var, invstd))
                })?
            }
        });
        let groups = geom.groups;
        let mut inputs: Vec<&Variable> = vec![self];
        inputs.extend(weight);
        inputs.extend(bias);
        let info = NormInfo {
            kind,
            geom,
            batch_stats,
            has_weight: weight.is_some(),
            has_bias: bias.is_some(),
            wshape,
            eps,
        };
        let mean_t = Tensor::from_vec(mean.clone(), &[groups])?;
        let invstd_t = Tensor::from_vec(invstd, &[groups])?;
        let out = Variable::record(result, &inputs, |_, _| {
            (
                Rule::Norm(Box::new(info)),
                smallvec![
                    Some(SavedTensor::input(self)),
                    weight.map(SavedTensor::input),
                    Some(SavedTensor::input(&Variable::from_tensor(mean_t))),
                    Some(SavedTensor::input(&Variable::from_tensor(invstd_t))),
                ],
            )
        });
        Ok((out, mean, var))
    }
}

// ----- composite normalisations ------------------------------------------------------------
//
// PyTorch composes these of other ops (ATen's `instance_norm` calls `batch_norm`;
// `rms_norm`, `local_response_norm` and `normalize` are compositions); so do we. See Note
// [Functional losses and norms in Rust].

impl Variable {
    /// `instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
    /// momentum, eps)`: each channel of each sample of `(N, C, *)` normalised on its own,
    /// as PyTorch: `batch_norm` over the input viewed as `(1, N * C, *)` and viewed back
    /// (ViewBackward0). The running statistics (if given, with `use_input_stats`)
    /// receive the mean over the batch of the per-sample updates.
    #[allow(clippy::too_many_arguments)]
    pub fn instance_norm(
        &self,
        running_mean: Option<&Variable>,
        running_var: Option<&Variable>,
        weight: Option<&Variable>,
        bias: Option<&Variable>,
        use_input_stats: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<Variable> {
        let shape = self.shape();
        if shape.len() < 2 {
            return Err(Error::InvalidArgument(format!(
                "Expected at least 2 dimensions for input tensor but received {}",
                shape.len()
            )));
        }
        if !use_input_stats && (running_mean.is_none() || running_var.is_none()) {
            return Err(Error::InvalidArgument(
                "Expected running_mean and running_var to be defined when use_input_stats is false"
                    .into(),
            ));
        }
        let (b, c) = (shape[0] as i64, shape[1] as i64);
        let mut folded: Vec<i64> = vec![1, b * c];
        folded.extend(shape[2..].iter().map(|&s| s as i64));
        let x = self.contiguous()?.view(&folded)?;
        let repeat = |v: Option<&Variable>| v.map(|v| v.repeat(&[b])).transpose();
        let (w, bb) = (repeat(weight)?, repeat(bias)?);
        let (rm, rv) = {
            let _no_grad = grad_mode::GradModeGuard::new(false);
            (repeat(running_mean)?, repeat(running_var)?)
        };
        let out = x.batch_norm(
            rm.as_ref(),
            rv.as_ref(),
            w.as_ref(),
            bb.as_ref(),
            use_input_stats,
            momentum,
            eps,
        )?;
        if use_input_stats {
            let _no_grad = grad_mode::GradModeGuard::new(false);
            for (stat, folded) in [(running_mean, &rm), (running_var, &rv)] {
                if let (Some(stat), Some(folded)) = (stat, folded) {
                    stat.copy_(&folded.view(&[b, c])?.mean_dims(&[0], false)?)?;
                }
            }
        }
        let dims: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        out.view(&dims)
    }

    /// `rms_norm(input, normalized_shape, weight, eps)`: `x * rsqrt(mean(x^2) + eps) *
    /// weight` over the last `len(normalized_shape)` dims; `eps = None` is the dtype's
    /// machine epsilon, as in PyTorch.
    pub fn rms_norm(
        &self,
        normalized_shape: &[i64],
        weight: Option<&Variable>,
        eps: Option<f64>,
    ) -> Result<Variable> {
        let shape: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
        let k = normalized_shape.len();
        if k == 0 || shape.len() < k || shape[shape.len() - k..] != *normalized_shape {
            let dims: Vec<String> = normalized_shape.iter().map(i64::to_string).collect();
            return Err(Error::InvalidArgument(format!(
                "Given normalized_shape={normalized_shape:?}, expected input with shape [*{}], but got input of size{shape:?}",
                dims.join(", ")
            )));
        }
        if let Some(w) = weight {
            let ws: Vec<i64> = w.shape().iter().map(|&s| s as i64).collect();
            if ws != normalized_shape {
                return Err(Error::InvalidArgument(format!(
                    "Expected weight to be of same shape as normalized_shape, but got weight of shape {ws:?} and normalized_shape = {normalized_shape:?}"
                )));
            }
        }
        if !self.dtype().is_floating_point() {
            return Err(Error::unsupported_dtype("rms_norm", self.dtype()));
        }
        let eps = eps.unwrap_or(match self.dtype() {
            DType::F64 => f64::EPSILON,
            DType::F16 => 0.000_976_562_5,
            DType::BF16 => 0.007_812_5,
            _ => f32::EPSILON as f64,
        });
        let dims: Vec<i64> = (-(k as i64)..0).collect();
        let out = self.mul(
            &self
                .pow_scalar(2.0)?
                .mean_dims(&dims, true)?
                .add_scalar(eps)?
                .rsqrt()?,
        )?;
        match weight {
            Some(w) => out.mul(w),
            None => Ok(out),
        }
    }

    /// `local_response_norm(input, size, alpha, beta, k)` across channels (dim 1):
    /// `x / (k + alpha * mean(x^2 over size neighbouring channels))^beta`, the window
    /// zero-padded by `size / 2` before and `(size - 1) / 2` after, as PyTorch (an
    /// average pool over the channels).
    pub fn local_response_norm(
        &self,
        size: i64,
        alpha: f64,
        beta: f64,
        k: f64,
    ) -> Result<Variable> {
        if self.dim() < 3 {
            return Err(Error::InvalidArgument(format!(
                "Expected 3D or higher dimensionality input (got {} dimensions)",
                self.dim()
            )));
        }
        if self.numel() == 0 {
            return Ok(self.clone());
        }
        let shape = self.shape();
        let (n, c) = (shape[0] as i64, shape[1] as i64);
        let rest: usize = shape[2..].iter().product();
        let squares = self.mul(self)?.reshape(&[n, 1, c, rest as i64])?;
        let padded = squares.pad(
            // Python's floor division, as PyTorch's functional (a bad size then fails in
            // the pooling with PyTorch's message).
            &[0, 0, size.div_euclid(2), (size - 1).div_euclid(2)],
            super::spatial::PadMode::Constant,
            Some(0.0),
        )?;
        let window = super::pool::Pool2d {
            kernel_size: [size, 1],
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            ceil_mode: false,
        };
        let dims: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        let div = padded
            .avg_pool2d(&window, true, None)?
            .reshape(&dims)?
            .mul_scalar(alpha)?
            .add_scalar(k)?
            .pow_scalar(beta)?;
        self.div(&div)
    }

    /// `normalize(input, p, dim, eps)`: `input / max(||input||_p along dim, eps)`.
    pub fn normalize(&self, p: f64, dim: i64, eps: f64) -> Result<Variable> {
        let dims: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
        let denom = self
            .vector_norm(p, Some(&[dim]), true)?
            .clamp_min(crate::tensor::Scalar::Float(eps))?
            .expand(&dims)?;
        self.div(&denom)
    }
}
